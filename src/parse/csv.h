/* RFC 4180 CSV reader: pure (bytes in, records out, no I/O), bounded.
 * Accepts LF or CRLF line ends, quoted fields with doubled quotes and
 * embedded newlines, and a UTF-8 byte-order mark. Text must be UTF-8
 * without NUL bytes: a record holding either is refused with the line and
 * field of the first bad byte, and reading can go on after it. */
#ifndef GI_CSV_H
#define GI_CSV_H

#include <stdbool.h>
#include <stddef.h>

#define CSV_MAX_FIELDS 256
#define CSV_MAX_FIELD 65536

struct csv {
    const char *p, *end;
    size_t line; /* line on which the next record starts, 1-based */
    char *buf;   /* field storage for the current record */
    size_t cap;
    char *fields[CSV_MAX_FIELDS];
    size_t nfields;
    size_t record_line; /* line on which the current record started */
    char error[128];
    size_t error_line;  /* line of the byte that made csv_next fail */
    size_t error_field; /* 1-based field of that byte; 0 when none */
    bool resumable;     /* the failed record was read to its end: go on */
};

/* Starts reading data (borrowed; must outlive the reader). */
void csv_init(struct csv *c, const char *data, size_t len);
/* Reads the next record into c->fields/c->nfields. Returns 1 for a
 * record, 0 at the end, -1 on malformed input: c->error says why, at
 * c->error_line (and c->error_field); the record began at c->record_line.
 * After an encoding error (invalid UTF-8, a NUL byte) c->resumable is set
 * and the next call reads the following record; after a structural error
 * (an unterminated quote, a bound) it is not, and reading must stop. */
int csv_next(struct csv *c);
/* Frees the reader's buffer; accepts a zeroed reader. */
void csv_free(struct csv *c);

#endif
