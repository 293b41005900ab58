/* libFuzzer target for FusionInventory / GLPI agent messages: any bytes
 * as a POST body (zlib, gzip, raw deflate or plain, told by its first
 * bytes) decoded within a small bound and parsed. Checks the invariants
 * glpi.h promises: an error says why, every record has a kind and a
 * source_key, a child names its parent, and a decoded text never exceeds
 * its bound. */
#include "core/status.h"
#include "parse/glpi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small, so that inflation bombs hit the bound quickly. */
#define FUZZ_MAX_DECODED (1u << 20)

static void check_records(const struct glpi_msg *m)
{
    size_t i;
    json_t *r;

    if (strcmp(m->query, "INVENTORY") != 0) {
        if (m->records != NULL)
            abort();
        return;
    }
    if (m->records == NULL || json_array_size(m->records) == 0 ||
        json_array_size(m->records) > GLPI_MAX_RECORDS)
        abort();
    json_array_foreach(m->records, i, r) {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (kind == NULL || !json_is_string(json_object_get(r, "source_key")) ||
            !json_is_object(json_object_get(r, "custom")))
            abort();
        if (i > 0 && !json_object_get(r, "parent_tag") && !json_object_get(r, "parent_serial") &&
            !json_object_get(r, "parent_source_key"))
            abort();
        if (json_is_string(json_object_get(r, "serial")) &&
            glpi_is_junk(json_string_value(json_object_get(r, "serial"))))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "", *xml = NULL;
    size_t len = 0;
    enum glpi_encoding enc = glpi_detect(data, size, "application/x-compress-zlib");
    int st = glpi_decode(data, size, enc, FUZZ_MAX_DECODED, &xml, &len, err, sizeof err);

    if (st != GI_OK) {
        if (xml != NULL || (st != GI_INTERNAL && err[0] == '\0'))
            abort();
        return 0;
    }
    if (len > FUZZ_MAX_DECODED || xml[len] != '\0')
        abort();
    err[0] = '\0';
    st = glpi_parse(xml, len, &m, err, sizeof err);
    if (st != GI_OK && err[0] == '\0')
        abort();
    if (st == GI_OK)
        check_records(&m);
    glpi_msg_free(&m);
    free(xml);
    return 0;
}
