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
};

/* Reads ?dry_run, checks the body is CSV and reads its header row into c
 * (c->fields). False after replying 415/400. The caller frees c with
 * csv_free and rep->errors with json_decref, even on false. */
bool import_open_or_reply(struct req *r, struct csv *c, struct import_report *rep);
/* Reads the next non-blank data row into c: 1 a row, 0 the end (a
 * malformed row is recorded as a problem and ends the reading), -1 after
 * replying 413 past max_rows. Counts rows in rep->rows. */
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

#endif
