/* Fuzz target for the CSV reader (src/parse/csv.c): any bytes must read as
 * records or end in a clean error, within the documented bounds. */
#include "parse/csv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct csv c;
    size_t last_line = 0, records = 0;
    int rc;

    csv_init(&c, (const char *)data, size);
    for (;;) {
        rc = csv_next(&c);
        if (rc == -1 && c.resumable) {
            /* An encoding error names a line and field inside the record
             * and lets reading go on. */
            if (c.error[0] == '\0' || c.error_field < 1 || c.error_field > CSV_MAX_FIELDS ||
                c.error_line < c.record_line || c.error_line >= c.line)
                abort();
            last_line = c.record_line;
            if (++records > size + 1)
                abort();
            continue;
        }
        if (rc != 1)
            break;
        if (c.nfields < 1 || c.nfields > CSV_MAX_FIELDS)
            abort();
        if (c.record_line <= last_line || c.line <= c.record_line)
            abort(); /* lines only move forward, one or more per record */
        last_line = c.record_line;
        for (size_t i = 0; i < c.nfields; i++)
            if (strlen(c.fields[i]) > CSV_MAX_FIELD)
                abort();
        /* Each record consumes at least one byte, so this ends. */
        if (++records > size + 1)
            abort();
    }
    if (rc == -1 && c.error[0] == '\0')
        abort();
    if (rc == 0 && csv_next(&c) != 0)
        abort(); /* the end is sticky */
    csv_free(&c);
    return 0;
}
