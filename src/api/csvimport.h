/* What the CSV importers (resources, GPUs) share: opening the upload,
 * collecting every row's problems, and the verdict reply. Every importer
 * checks all rows first; any problem, or ?dry_run=true, writes nothing. A
 * dry run runs the import's own writes and rolls them back, so its answer
 * is the import's, conflicts included. */
#ifndef GI_CSVIMPORT_H
#define GI_CSVIMPORT_H

#include "http/request.h"
#include "parse/csv.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct import_report {
    json_t *errors; /* the first 1,000 problems */
    size_t nerr;    /* all of them */
    size_t rows;    /* data rows read */
    bool dry_run;
    json_t *header; /* the header row's names, spaces trimmed */
};

/* Reads ?dry_run, checks the body is CSV and reads its header row into c
 * (c->fields) and rep->header. A header column named twice is recorded as
 * a problem (line 1, that column). False after replying 415/400 (an empty
 * body, or a header that is not CSV or not UTF-8). The caller frees c
 * with csv_free and rep with import_report_free, even on false. */
bool import_open_or_reply(struct req *r, struct csv *c, struct import_report *rep);
/* Frees what a report holds; accepts a zeroed report. */
void import_report_free(struct import_report *rep);
/* The header name of 0-based column i, or "#N" (1-based) for a column the
 * header does not name; into buf. */
const char *import_column(const struct import_report *rep, size_t i, char *buf, size_t len);
/* Reads the next non-blank data row into c: 1 a row, 0 the end, -1 after
 * replying 413 past max_rows. A row holding invalid UTF-8 or a NUL byte is
 * recorded as a problem at the line and column of the bad byte and
 * skipped; any other malformed row is recorded and ends the reading.
 * Counts rows (bad ones included) in rep->rows. */
int import_next_row_or_reply(struct req *r, struct csv *c, struct import_report *rep,
                             size_t max_rows);
/* Records one problem: the line, the column (header name), the field it
 * concerns (may equal the column) and why. */
void import_problem(struct import_report *rep, size_t line, const char *column, const char *field,
                    const char *reason);
/* Replies 422 with every problem and returns false; returns true (no
 * reply) when the rows are valid. A dry run then goes on to rehearse the
 * write, so that it meets what the import would meet. */
bool import_verdict_or_reply(struct req *r, const struct import_report *rep);
/* Replies 200 for a clean dry run: valid, dry_run, rows, errors, and the
 * members of `would` (what the import would do; taken, may be NULL). */
void import_dry_run_reply(struct req *r, const struct import_report *rep, json_t *would);
/* Replies 409 for a row that conflicts with stored records. */
void import_conflict_reply(struct req *r, const struct import_report *rep);

/* The cell text as written before export: one leading apostrophe taken
 * off a cell whose apostrophes precede a formula character ("'=x"), as
 * the CSV export neutralizes formulas (csv_cell in http/request.c).
 * Borrowed from v. */
const char *import_unneutralize(const char *v);

#endif
