/* Prometheus text exposition format 0.0.4: pure parser (bytes in, one
 * callback per sample out, no I/O, no globals), bounded.
 *
 * Accepts `name[{label="value",…[,]}] value [timestamp_ms]` samples,
 * `# HELP` / `# TYPE` lines (the TYPE of a family is reported with its
 * samples), other `#` comments, blank lines, blanks and tabs between
 * tokens, a blank after the commas of a label set (older dcgm-exporter),
 * a trailing comma, and CRLF line ends. Label values are unescaped
 * (\\ \" \n) and must be UTF-8. Values may be NaN, +Inf, -Inf. Numbers
 * are read with strtod, so the process must keep the C locale for
 * LC_NUMERIC (gpuinv never calls setlocale).
 *
 * The sample type is shared with promapi.h, so one consumer (dcgm.h)
 * serves the text format and the Prometheus HTTP API alike. */
#ifndef GI_PROMTEXT_H
#define GI_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROM_MAX_LINE 65536      /* bytes in one line, without its end */
#define PROM_MAX_NAME 512        /* bytes in a metric or label name */
#define PROM_MAX_VALUE 16384     /* bytes in an unescaped label value */
#define PROM_MAX_LABELS 128      /* labels on one sample */
#define PROM_MAX_SAMPLES 4000000 /* samples in one input */

enum prom_type {
    PROM_UNTYPED = 0,
    PROM_COUNTER,
    PROM_GAUGE,
    PROM_HISTOGRAM,
    PROM_SUMMARY,
};

/* One label; both strings are NUL-terminated and unescaped. */
struct prom_label {
    const char *name;
    const char *value;
};

/* One sample. Every pointer is borrowed and valid only during the
 * callback that receives it. */
struct prom_sample {
    const char *name;                /* "" when the source gave none (API) */
    const struct prom_label *labels; /* in input order */
    size_t nlabels;
    double value; /* may be NaN or ±Inf */
    bool has_ts;
    int64_t ts_ms;       /* ms since epoch when has_ts */
    enum prom_type type; /* from the family's # TYPE, else untyped */
};

/* Where and why parsing stopped. */
struct prom_error {
    size_t line;       /* 1-based input line; 0 when not tied to a line */
    char msg[256];     /* "" on success */
    char api_type[32]; /* promapi: errorType of an error envelope, else "" */
};

/* Receives one sample. Returns GI_OK to go on; any other status stops
 * the parse, which then returns that status. A consumer that fails may
 * write its reason into err->msg (err->line is already set). */
typedef int (*prom_sample_fn)(void *ctx, const struct prom_sample *s, struct prom_error *err);

/* Parses text (borrowed, need not be NUL-terminated) and calls fn for
 * each sample in order. Returns GI_OK; GI_INVALID for malformed input or
 * GI_TOO_LARGE past a bound (err says which line and why, and nothing
 * after that line was delivered); or the consumer's status. err may be
 * NULL. */
int prom_parse_text(const char *data, size_t len, prom_sample_fn fn, void *ctx,
                    struct prom_error *err);

/* Parses a sample value token of exactly len bytes: a decimal or
 * exponent number, NaN, +Inf, -Inf (any case, as Prometheus accepts).
 * Returns 0, or -1 if it is not one. */
int prom_parse_value(const char *s, size_t len, double *out);

/* Looks up a label by name; NULL when the sample has none. */
const char *prom_label_get(const struct prom_sample *s, const char *name);

/* Stable lower-case name of a type ("counter", …, "untyped"). */
const char *prom_type_name(enum prom_type t);

#endif
