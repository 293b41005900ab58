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
    c->error_line = c->line;
    c->error_field = c->nfields + 1;
    c->resumable = false;
    return -1;
}

/* The offset of the first byte of s[0..n) that is a NUL or not part of
 * well-formed UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF); n when there is none. */
static size_t first_bad_byte(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char b = s[i];
        size_t k;
        unsigned char lo = 0x80, hi = 0xbf;
        if (b == 0)
            return i;
        if (b < 0x80) {
            i++;
            continue;
        }
        if (b >= 0xc2 && b <= 0xdf)
            k = 1;
        else if (b >= 0xe0 && b <= 0xef)
            k = 2, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
        else if (b >= 0xf0 && b <= 0xf4)
            k = 3, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
        else
            return i;
        if (i + k >= n)
            return i; /* cut short by the end of the field */
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return i;
        i += k + 1;
    }
    return n;
}

/* Checks the field just read (buf[start..len)), which began on line
 * `line`; records the first bad byte of the record. */
static void check_text(struct csv *c, size_t start, size_t len, size_t line)
{
    const unsigned char *f = (const unsigned char *)c->buf + start;
    size_t at = first_bad_byte(f, len - start);

    if (at == len - start || c->resumable)
        return;
    for (size_t i = 0; i < at; i++)
        line += f[i] == '\n';
    snprintf(c->error, sizeof c->error, "%s at byte %zu of field %zu",
             f[at] == 0 ? "a NUL byte" : "invalid UTF-8", at + 1, c->nfields + 1);
    c->error_line = line;
    c->error_field = c->nfields + 1;
    c->resumable = true;
}

int csv_next(struct csv *c)
{
    size_t len = 0, start = 0;
    size_t offs[CSV_MAX_FIELDS];

    c->nfields = 0;
    c->record_line = c->line;
    c->resumable = false;
    c->error_line = c->error_field = 0;
    c->error[0] = '\0';
    if (c->p >= c->end)
        return 0;
    for (;;) {
        size_t field_line = c->line;
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
        check_text(c, start, len, field_line);
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
    return c->resumable ? -1 : 1;
}
