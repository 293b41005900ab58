/* Shared CSV import steps; see csvimport.h. */
#include "api/csvimport.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define IMPORT_MAX_LISTED 1000

void import_report_free(struct import_report *rep)
{
    json_decref(rep->errors);
    json_decref(rep->header);
    rep->errors = rep->header = NULL;
}

const char *import_column(const struct import_report *rep, size_t i, char *buf, size_t len)
{
    const char *name = json_string_value(json_array_get(rep->header, i));

    if (name && *name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "#%zu", i + 1);
    return buf;
}

/* Keeps the header's names (spaces trimmed) and records every column
 * named like an earlier one (case and spaces aside): one of the two
 * would otherwise be dropped without a word. */
static void read_header(struct import_report *rep, const struct csv *c)
{
    for (size_t i = 0; i < c->nfields; i++) {
        const char *h = c->fields[i];
        size_t n;
        while (*h == ' ')
            h++;
        for (n = strlen(h); n > 0 && h[n - 1] == ' '; n--)
            ;
        json_array_append_new(rep->header, json_stringn(h, n));
    }
    for (size_t i = 1; i < c->nfields; i++) {
        const char *hi = json_string_value(json_array_get(rep->header, i));
        for (size_t j = 0; hi && *hi && j < i; j++) {
            const char *hj = json_string_value(json_array_get(rep->header, j));
            char why[160];
            if (hj == NULL || strcasecmp(hi, hj) != 0)
                continue;
            snprintf(why, sizeof why,
                     "column %zu repeats the name of column %zu; each column must be named once",
                     i + 1, j + 1);
            import_problem(rep, c->record_line, hi, hi, why);
            break;
        }
    }
}

bool import_open_or_reply(struct req *r, struct csv *c, struct import_report *rep)
{
    int st;

    memset(rep, 0, sizeof *rep);
    rep->errors = json_array();
    rep->header = json_array();
    csv_init(c, r->body ? r->body : "", r->body_len);
    if (!req_param_bool_or_reply(r, "dry_run", &rep->dry_run))
        return false;
    if (!req_media_type_is(r, "text/csv")) {
        reply_error(r, 415, "unsupported_media_type", NULL,
                    "the body must be CSV in UTF-8 (Content-Type: text/csv)");
        return false;
    }
    if ((st = csv_next(c)) != 1) {
        if (st == 0)
            reply_error(r, 400, "invalid_csv", NULL,
                        "line 1: the file is empty; a header row is required");
        else
            reply_error(r, 400, "invalid_csv", NULL, "line %zu, column %zu of the header: %s",
                        c->error_line, c->error_field, c->error);
        return false;
    }
    read_header(rep, c);
    return true;
}

int import_next_row_or_reply(struct req *r, struct csv *c, struct import_report *rep,
                             size_t max_rows)
{
    for (;;) {
        bool blank = true;
        int st = csv_next(c);
        char col[140], why[200];
        if (st == 0)
            return 0;
        if (st < 0 && c->resumable) {
            /* Counted as a row, so the row bound holds for bad files too. */
            if (++rep->rows > max_rows) {
                reply_error(r, 413, "too_large", NULL, "more than %zu rows in one import",
                            max_rows);
                return -1;
            }
            import_column(rep, c->error_field - 1, col, sizeof col);
            snprintf(why, sizeof why, "%s; the file must be UTF-8 text", c->error);
            import_problem(rep, c->error_line, col, col, why);
            continue;
        }
        if (st < 0) {
            import_problem(rep, c->record_line, NULL, NULL, c->error);
            return 0;
        }
        for (size_t i = 0; i < c->nfields; i++)
            blank = blank && c->fields[i][0] == '\0';
        if (blank)
            continue;
        if (++rep->rows > max_rows) {
            reply_error(r, 413, "too_large", NULL, "more than %zu rows in one import", max_rows);
            return -1;
        }
        return 1;
    }
}

void import_problem(struct import_report *rep, size_t line, const char *column, const char *field,
                    const char *reason)
{
    rep->nerr++;
    if (json_array_size(rep->errors) >= IMPORT_MAX_LISTED)
        return;
    json_array_append_new(rep->errors, json_pack("{s:I, s:s, s:s, s:s}", "line", (json_int_t)line,
                                                 "column", column ? column : "", "field",
                                                 field ? field : "", "reason", reason));
}

/* The shared body of 422 and 409 replies. */
static void problems_reply(struct req *r, unsigned status, const char *code, const char *msg,
                           const struct import_report *rep)
{
    reply_json(r, status,
               json_pack("{s:{s:s, s:s}, s:b, s:I, s:I, s:O}", "error", "code", code, "message",
                         msg, "valid", 0, "rows", (json_int_t)rep->rows, "error_count",
                         (json_int_t)rep->nerr, "errors", rep->errors));
}

bool import_verdict_or_reply(struct req *r, const struct import_report *rep)
{
    if (rep->nerr > 0) {
        problems_reply(r, 422, "validation_failed",
                       "the file has invalid rows; nothing was imported", rep);
        return false;
    }
    return true;
}

void import_dry_run_reply(struct req *r, const struct import_report *rep, json_t *would)
{
    json_t *out = json_pack("{s:b, s:b, s:I, s:[]}", "valid", 1, "dry_run", 1, "rows",
                            (json_int_t)rep->rows, "errors");

    if (json_is_object(would))
        json_object_update(out, would);
    json_decref(would);
    reply_json(r, 200, out);
}

void import_conflict_reply(struct req *r, const struct import_report *rep)
{
    problems_reply(r, 409, "conflict",
                   "a row conflicts with existing records; nothing was imported", rep);
}

/* The cell text as written before export: a cell whose leading
 * apostrophes precede a formula character ("'=x", "''-y") lost one
 * apostrophe's worth of meaning to formula neutralization (see csv_cell in
 * http/request.c), so one is taken off again. Borrowed from v. */
const char *import_unneutralize(const char *v)
{
    const char *p = v;

    while (*p == '\'')
        p++;
    if (p > v && *p != '\0' && strchr("=+-@\t\r", *p) != NULL)
        return v + 1;
    return v;
}
