/* RFC 4180 CSV reader; see csv.h. */
#include "parse/csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void csv_init(struct csv *c, const char *data, size_t len)
{
    memset(c, 0, sizeof *c);
    c->p = data;
    c->end = data + len;
    c->line = 1;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        c->p += 3;
}

void csv_free(struct csv *c)
{
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
}

/* The largest record: every field at its bound plus its terminator. */
#define CSV_MAX_RECORD ((size_t)CSV_MAX_FIELDS * (CSV_MAX_FIELD + 1))

/* Appends one byte to the record buffer; false past the bound. */
static bool put(struct csv *c, size_t *len, char ch)
{
    if (*len >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        char *nb;
        if (cap > CSV_MAX_RECORD)
            cap = CSV_MAX_RECORD;
        if (*len >= cap)
            return false;
        if ((nb = realloc(c->buf, cap)) == NULL)
            return false;
        c->buf = nb;
        c->cap = cap;
    }
    c->buf[(*len)++] = ch;
    return true;
}

static int bad(struct csv *c, const char *msg)
{
    snprintf(c->error, sizeof c->error, "%s", msg);
    return -1;
}

int csv_next(struct csv *c)
{
    size_t len = 0, start = 0;
    size_t offs[CSV_MAX_FIELDS];

    c->nfields = 0;
    c->record_line = c->line;
    if (c->p >= c->end)
        return 0;
    for (;;) {
        /* One field. */
        if (c->nfields == CSV_MAX_FIELDS)
            return bad(c, "too many fields in one row");
        start = len;
        if (c->p < c->end && *c->p == '"') {
            c->p++;
            for (;;) {
                if (c->p >= c->end)
                    return bad(c, "unterminated quoted field");
                if (*c->p == '"') {
                    if (c->p + 1 < c->end && c->p[1] == '"') {
                        c->p += 2;
                        if (!put(c, &len, '"'))
                            return bad(c, "field too large");
                        continue;
                    }
                    c->p++;
                    break;
                }
                if (*c->p == '\n')
                    c->line++;
                if (!put(c, &len, *c->p++))
                    return bad(c, "field too large");
            }
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r')
                return bad(c, "unexpected character after a closing quote");
        } else {
            while (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r') {
                if (*c->p == '"')
                    return bad(c, "quote inside an unquoted field");
                if (!put(c, &len, *c->p++))
                    return bad(c, "field too large");
            }
        }
        if (len - start > CSV_MAX_FIELD)
            return bad(c, "field too large");
        if (!put(c, &len, '\0'))
            return bad(c, "field too large");
        offs[c->nfields++] = start;
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '\r')
            c->p++;
        if (c->p < c->end && *c->p == '\n')
            c->p++;
        c->line++;
        break;
    }
    for (size_t i = 0; i < c->nfields; i++)
        c->fields[i] = c->buf + offs[i];
    return 1;
}
