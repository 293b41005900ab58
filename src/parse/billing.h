/* Cloud billing exports as CSV: AWS Cost and Usage Reports (legacy
 * "lineItem/UnblendedCost" and CUR 2.0 "line_item_unblended_cost" column
 * names), the GCP billing export (the BigQuery table written as CSV:
 * "sku.description" or "sku_description", labels and credits as JSON
 * arrays) and Azure cost details (EA PascalCase, pay-as-you-go, MCA
 * camelCase). Pure: bytes in, lines out, no I/O.
 *
 * Column names are matched ignoring case and every character but letters
 * and digits, which is how the variants of one provider differ. Only the
 * lines of GPU capacity are kept (AWS instance families p and g, GCP
 * "GPU" SKUs and the A2/A3/A4/G2/G4 machine families, Azure NC/ND/NV
 * series or "GPU" in the meter); the others are counted and skipped
 * unread, so that their cells cannot fail an import. */
#ifndef GI_PARSE_BILLING_H
#define GI_PARSE_BILLING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum billing_format { BILLING_AUTO, BILLING_AWS, BILLING_GCP, BILLING_AZURE };

/* One kept line. Strings are owned by the file (never NULL; "" when the
 * export has no value). */
struct billing_line {
    size_t line;          /* the CSV line the record started on */
    const char *provider; /* "aws", "gcp" or "azure" (static) */
    char *account;        /* AWS usage account, GCP billing account, Azure subscription */
    char *line_key;       /* the provider's line id and interval, else a digest of the cells */
    char *resource_id;    /* AWS i-..., GCP numeric id, Azure resource path */
    char *resource_name;  /* GCP instance name, Azure VM name (the path's last segment) */
    char *instance_type;  /* AWS instance type, GCP machine spec or SKU, Azure VM size or meter */
    char *currency;       /* ISO 4217, upper case */
    char *team;           /* the value of a tag or label named team (any case) */
    int64_t start, end;   /* usage interval, unix seconds */
    int64_t cost_micros;  /* net of credits */
    int64_t credits_micros;
    json_t *tags; /* object of the line's tags or labels */
};

struct billing_problem {
    size_t line;
    char column[96];
    char reason[200];
};
#define BILLING_MAX_PROBLEMS 1000

struct billing_file {
    enum billing_format format;
    const char *variant; /* aws-cur, aws-cur2, gcp, azure-ea, azure-payg, azure-mca */
    struct billing_line *lines;
    size_t n, cap;
    size_t rows;    /* data rows read */
    size_t skipped; /* rows that are not GPU capacity */
    struct billing_problem *problems;
    size_t nproblems; /* listed: at most BILLING_MAX_PROBLEMS */
    size_t nerr;      /* all */
};

/* Parses a whole export. GI_OK: every kept line is valid; GI_INVALID: the
 * file or some lines are not (problems name line and column, nothing of a
 * bad line is kept); GI_TOO_LARGE: more than max_rows data rows. With
 * BILLING_AUTO the header decides the provider. The caller frees *out
 * with billing_file_free in every case. */
int billing_parse(const char *data, size_t len, enum billing_format fmt, size_t max_rows,
                  struct billing_file *out);
void billing_file_free(struct billing_file *f);

/* "aws", "gcp", "azure" or "auto"; false for anything else. */
bool billing_format_from_name(const char *name, enum billing_format *out);

/* A timestamp in any form the exports write: RFC 3339 with Z or an offset
 * and 0 to 9 fractional digits, "YYYY-MM-DD HH:MM:SS UTC", a date alone,
 * a local time without zone (read as UTC), MM/DD/YYYY with an optional
 * time, or unix seconds. GI_OK or GI_INVALID. */
int billing_time(const char *s, int64_t *out);

#endif
