/* hl-smi output parsers (CSV query, summary table); see hlsmi.h.
 *
 * hl-smi's CSV separates cells with ", " and does not quote; rows are read
 * with parse/csv.c one line at a time, and a line csv.c refuses (a stray
 * quote in a name) is split on commas as it stands. */
#define _GNU_SOURCE
#include "parse/hlsmi.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/csv.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_COLS 64
#define MAX_LINE 65536
#define MAX_AIPS 1024

__attribute__((format(printf, 3, 4))) static void fail(char *err, size_t errlen, const char *fmt,
                                                       ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- lines ------------------------------------------------------------- */

/* Walks the input line by line; each line is copied NUL-terminated into
 * buf without its line end and without a Habana logging prefix. */
struct lines {
    const char *p, *end;
    size_t lineno;
    char *buf;
};

/* Removes "[2024-11-06 04:40:27.206] [hlsmi] [info] " from the front of s:
 * a bracketed time stamp and at least one bracketed word after it. */
static char *strip_log_prefix(char *s)
{
    char *p = s, *close;
    int words = 0;

    if (s[0] != '[' || !isdigit((unsigned char)s[1]) || (close = strchr(s, ']')) == NULL ||
        close[1] != ' ')
        return s;
    for (char *q = s + 1; q < close; q++)
        if (!isdigit((unsigned char)*q) && !strchr("-:. T", *q))
            return s;
    p = close + 2;
    while (p[0] == '[') {
        char *q = p + 1;
        while (isalpha((unsigned char)*q) || *q == '_')
            q++;
        if (q == p + 1 || q[0] != ']' || q - p > 24)
            break;
        p = q + 1;
        while (*p == ' ')
            p++;
        words++;
    }
    return words > 0 ? p : s;
}

/* The next line, or NULL at the end. *too_long is set for a line longer
 * than MAX_LINE (returned cut). */
static char *lines_next(struct lines *L, int *too_long)
{
    const char *nl;
    size_t n;

    *too_long = 0;
    if (L->p >= L->end)
        return NULL;
    nl = memchr(L->p, '\n', (size_t)(L->end - L->p));
    n = nl ? (size_t)(nl - L->p) : (size_t)(L->end - L->p);
    if (n > MAX_LINE) {
        *too_long = 1;
        n = MAX_LINE;
    }
    memcpy(L->buf, L->p, n);
    L->buf[n] = '\0';
    if (n > 0 && L->buf[n - 1] == '\r')
        L->buf[n - 1] = '\0';
    L->p = nl ? nl + 1 : L->end;
    L->lineno++;
    /* A NUL byte ends the line's text; the rest of the line is ignored. */
    return strip_log_prefix(L->buf);
}

static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

/* Splits line into at most cap trimmed cells (pointers into store, which
 * must hold strlen(line) + 1 bytes). Returns the number of cells, which
 * may exceed cap (the extra are counted, not kept). */
static size_t split_cells(const char *line, char *store, char **cells, size_t cap)
{
    struct csv c;
    size_t n = 0, len = strlen(line);

    csv_init(&c, line, len);
    if (csv_next(&c) == 1) {
        char *o = store;
        for (size_t i = 0; i < c.nfields; i++) {
            size_t fl = strlen(c.fields[i]);
            if (n < cap) {
                memcpy(o, c.fields[i], fl + 1);
                cells[n] = trim(o);
            }
            o += fl + 1;
            n++;
        }
        if (o - store <= (ptrdiff_t)len + 1) {
            csv_free(&c);
            return n;
        }
        n = 0; /* csv.c unquoted more than the line holds: cannot happen */
    }
    csv_free(&c);
    /* Not RFC 4180 (a quote inside a cell): hl-smi's own form. */
    memcpy(store, line, len + 1);
    for (char *p = store;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < cap)
            cells[n] = trim(p);
        n++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    return n;
}

/* ---- values ------------------------------------------------------------ */

enum unit { U_NONE, U_MIB, U_W, U_C, U_PCT, U_MHZ };

static int absent(const char *s) { return gi_is_placeholder(s) || strcasecmp(s, "na") == 0; }

/* Parses "98304", "98304 MiB", "0 %", "88 W", "27 C" (the unit, when
 * given, must be u's). Returns 0, or -1 when s is not such a number. */
static int parse_num(const char *s, enum unit u, double *out)
{
    static const struct {
        enum unit u;
        const char *text;
        double scale;
    } units[] = {
        {U_MIB, "MiB", 1.0},
        {U_MIB, "MB", 1.0},
        {U_MIB, "GiB", 1024.0},
        {U_MIB, "GB", 1024.0},
        {U_MIB, "KiB", 1e-3},
        {U_W, "W", 1.0},
        {U_W, "mW", 1e-3},
        {U_C, "C", 1.0},
        {U_PCT, "%", 1.0},
        {U_MHZ, "MHz", 1.0},
        {U_C,
         "\xC2\xB0"
         "C",
         1.0},
    };
    char *end = NULL;
    double v, scale = 1.0;
    const char *rest;

    if (!(isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '.'))
        return -1;
    v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -1;
    for (const char *q = s; q < end; q++) /* no hex floats, no "inf" */
        if (!isdigit((unsigned char)*q) && !strchr("+-.eE", *q))
            return -1;
    rest = end;
    while (*rest == ' ')
        rest++;
    if (*rest != '\0') {
        size_t i, n = sizeof units / sizeof units[0];
        for (i = 0; i < n; i++)
            if (units[i].u == u && strcmp(units[i].text, rest) == 0)
                break;
        if (i == n)
            return -1;
        scale = units[i].scale;
    }
    v *= scale;
    if (v > 1e15 || v < (u == U_C ? -273.15 : 0.0))
        return -1;
    *out = v;
    return 0;
}

/* Copies an identity string; -1 when it is too long or not clean text. */
static int put_str(char *dst, size_t cap, const char *src)
{
    if (!gi_text_ok(src) || strpbrk(src, "\r\n\t") != NULL)
        return -1;
    return gi_strlcpy(dst, src, cap) ? 0 : -1;
}

/* ---- model names ------------------------------------------------------- */

static const struct {
    const char *board; /* prefix of hl-smi's name */
    const char *part;  /* the UUID's part number */
    const char *gen;
    double cap_w;
} gens[] = {
    {"HL-205", "HL2000", "Gaudi", 350},
    {"HL-225", "HL2080", "Gaudi2", 600},
    {"HL-288", NULL, "Gaudi2E", 450},
    {"HL-3", "HL3090", "Gaudi3", 900},
};

void hlsmi_model_name(const char *board, const char *uuid, char *out, size_t cap)
{
    const char *gen = NULL;
    const char *dash = uuid ? strchr(uuid, '-') : NULL;
    size_t n = sizeof gens / sizeof gens[0];

    if (cap == 0)
        return;
    out[0] = '\0';
    if (board && *board)
        for (size_t i = 0; i < n && gen == NULL; i++)
            if (strncmp(board, gens[i].board, strlen(gens[i].board)) == 0)
                gen = gens[i].gen;
    if (gen == NULL && dash)
        for (size_t i = 0; i < n && gen == NULL; i++)
            if (gens[i].part && strncmp(dash + 1, gens[i].part, strlen(gens[i].part)) == 0)
                gen = gens[i].gen;
    if (gen && board && *board)
        snprintf(out, cap, "Intel %s %s", gen, board);
    else if (gen)
        snprintf(out, cap, "Intel %s", gen);
    else if (board && *board)
        snprintf(out, cap, "Intel %s", board);
}

double hlsmi_power_cap_w(const char *model)
{
    char gen[32];
    const char *sp;
    size_t n;

    if (model == NULL || strncmp(model, "Intel ", 6) != 0)
        return 0;
    model += 6;
    sp = strchr(model, ' ');
    n = sp ? (size_t)(sp - model) : strlen(model);
    if (n >= sizeof gen)
        return 0;
    memcpy(gen, model, n);
    gen[n] = '\0';
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++)
        if (strcmp(gens[i].gen, gen) == 0)
            return gens[i].cap_w;
    return 0;
}

/* ---- CSV query ----------------------------------------------------------- */

enum col {
    K_OTHER,
    K_INDEX,
    K_MODULE,
    K_BUS,
    K_NAME,
    K_SERIAL,
    K_UUID,
    K_DRIVER,
    K_MTOT,
    K_MUSED,
    K_MFREE,
    K_UTIL,
    K_TEMP,
    K_POWER,
    K_POWER_MAX,
    K_ECC_CV,
    K_ECC_CA,
    K_ECC_UV,
    K_ECC_UA,
};

static const struct {
    const char *name;
    enum col col;
} known[] = {
    {"index", K_INDEX},
    {"module_id", K_MODULE},
    {"bus_id", K_BUS},
    {"name", K_NAME},
    {"serial", K_SERIAL},
    {"uuid", K_UUID},
    {"driver_version", K_DRIVER},
    {"memory.total", K_MTOT},
    {"memory.used", K_MUSED},
    {"memory.free", K_MFREE},
    {"utilization.aip", K_UTIL},
    {"temperature.aip", K_TEMP},
    {"power.draw", K_POWER},
    {"power.max", K_POWER_MAX},
    {"ecc.errors.corrected.volatile.total", K_ECC_CV},
    {"ecc.errors.corrected.aggregate.total", K_ECC_CA},
    {"ecc.errors.uncorrected.volatile.total", K_ECC_UV},
    {"ecc.errors.uncorrected.aggregate.total", K_ECC_UA},
    /* Fields hl-smi knows that gpuinv does not read. */
    {"timestamp", K_OTHER},
    {"ecc.mode.current", K_OTHER},
    {"ecc.mode.pending", K_OTHER},
    {"stats.violation.power", K_OTHER},
    {"stats.violation.thermal", K_OTHER},
};

struct layout {
    enum col cols[MAX_COLS];
    size_t ncols;
    int name_at; /* column of the name, -1 none */
};

/* Reads a header cell (or a field of the -Q list) into its column.
 * Returns 1 for a known field, 0 for a field-shaped unknown one, -1 for a
 * cell that is not a field name. */
static int header_cell(char *cell, enum col *col)
{
    char *br = strrchr(cell, '[');
    size_t n;

    /* "memory.total [MiB]": the unit stays in the header with nounits. */
    if (br && br > cell && br[strlen(br) - 1] == ']') {
        *br = '\0';
        cell = trim(cell);
    }
    n = strlen(cell);
    if (n == 0 || n > 64)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)cell[i]) && !isdigit((unsigned char)cell[i]) &&
            !strchr("._-", cell[i]))
            return -1;
    if (!islower((unsigned char)cell[0]))
        return -1;
    *col = K_OTHER;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i].name, cell) == 0) {
            *col = known[i].col;
            return 1;
        }
    return 0;
}

/* Builds the layout from the cells of a header (or -Q list). Returns 0,
 * or -1 with err filled. */
static int build_layout(struct layout *lo, char **cells, size_t n, size_t lineno, char *err,
                        size_t errlen)
{
    int nknown = 0;

    if (n > MAX_COLS) {
        fail(err, errlen, "line %zu: more than %d columns", lineno, MAX_COLS);
        return -1;
    }
    lo->ncols = n;
    lo->name_at = -1;
    for (size_t i = 0; i < n; i++) {
        char cell[80];
        int r;
        if (!gi_strlcpy(cell, cells[i], sizeof cell)) {
            fail(err, errlen, "line %zu: column %zu is not an hl-smi field name", lineno, i + 1);
            return -1;
        }
        r = header_cell(cell, &lo->cols[i]);
        if (r < 0) {
            fail(err, errlen,
                 "line %zu: column %zu (\"%.40s\") is not an hl-smi field name; expected the "
                 "header of hl-smi -Q … -f csv",
                 lineno, i + 1, cells[i]);
            return -1;
        }
        nknown += r;
        if (lo->cols[i] == K_NAME && lo->name_at < 0)
            lo->name_at = (int)i;
    }
    if (nknown == 0) {
        fail(err, errlen, "line %zu: the header names no field gpuinv reads (index, uuid, …)",
             lineno);
        return -1;
    }
    return 0;
}

/* True when the n cells name the layout's columns, as a header would. */
static int is_header(const struct layout *lo, char **cells, size_t n)
{
    if (n != lo->ncols)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char cell[80];
        enum col col;
        if (!gi_strlcpy(cell, cells[i], sizeof cell) || header_cell(cell, &col) < 0 ||
            col != lo->cols[i])
            return 0;
    }
    return 1;
}

/* A row's cells placed in the layout's columns; NULL where absent. */
struct row {
    const char *v[MAX_COLS];
    char name[GI_NAME_LEN * 2];
};

/* Places n cells into the layout's columns (see hlsmi.h for short and
 * long rows). Returns 0, or 1 when the row had the wrong cell count. */
static int place(const struct layout *lo, char **cells, size_t n, struct row *r)
{
    size_t k = lo->ncols;

    memset(r->v, 0, sizeof r->v);
    if (n <= k) {
        for (size_t i = 0; i < n; i++)
            r->v[i] = cells[i];
        return n == k ? 0 : 1;
    }
    if (lo->name_at < 0 || n > MAX_COLS) {
        for (size_t i = 0; i < k && i < MAX_COLS; i++)
            r->v[i] = cells[i];
        return 1;
    }
    {
        size_t p = (size_t)lo->name_at, after = k - 1 - p, o = 0;
        for (size_t i = 0; i < p; i++)
            r->v[i] = cells[i];
        for (size_t i = 0; i < after; i++)
            r->v[k - 1 - i] = cells[n - 1 - i];
        r->name[0] = '\0';
        for (size_t i = p; i < n - after; i++) {
            int w = snprintf(r->name + o, sizeof r->name - o, "%s%s", i > p ? ", " : "", cells[i]);
            if (w < 0 || (size_t)w >= sizeof r->name - o) {
                o = sizeof r->name; /* too long: the name is left absent */
                break;
            }
            o += (size_t)w;
        }
        r->v[p] = o < sizeof r->name ? r->name : "\x01";
    }
    return 0;
}

static int row_all_absent(const struct layout *lo, const struct row *r)
{
    for (size_t i = 0; i < lo->ncols; i++)
        if (r->v[i] && !absent(r->v[i]))
            return 0;
    return 1;
}

/* Reads a number for column i of the row into *dst. */
static void take_num(const struct row *r, size_t i, enum unit u, double *dst, const char *what,
                     size_t lineno, struct gi_obs_set *out)
{
    double d;

    if (r->v[i] == NULL || absent(r->v[i]))
        return;
    if (parse_num(r->v[i], u, &d) == 0)
        *dst = d;
    else
        gi_obs_warn(out, "line %zu: %s \"%.32s\" is not a number; left absent", lineno, what,
                    r->v[i]);
}

static void take_count(const struct row *r, size_t i, int64_t *dst, const char *what, size_t lineno,
                       struct gi_obs_set *out)
{
    int64_t v;

    if (r->v[i] == NULL || absent(r->v[i]))
        return;
    if (gi_parse_int64(r->v[i], 0, INT64_MAX, &v) == GI_OK)
        *dst = v;
    else
        gi_obs_warn(out, "line %zu: %s \"%.32s\" is not a count; left absent", lineno, what,
                    r->v[i]);
}

static void take_str(const struct row *r, size_t i, char *dst, size_t cap, const char *what,
                     size_t lineno, struct gi_obs_set *out)
{
    if (r->v[i] == NULL || absent(r->v[i]))
        return;
    if (put_str(dst, cap, r->v[i]) != 0) {
        dst[0] = '\0';
        gi_obs_warn(out, "line %zu: %s is too long or not text; left absent", lineno, what);
    }
}

/* Fills g from a placed row. */
static void row_to_gpu(const struct layout *lo, const struct row *r, struct gi_gpu_obs *g,
                       size_t lineno, struct gi_obs_set *out)
{
    char board[GI_NAME_LEN] = "", model[GI_NAME_LEN], who[48];
    double free_mib = NAN, cap;
    int64_t cv = -1, ca = -1, uv = -1, ua = -1, idx;

    g->vendor = GI_VENDOR_INTEL;
    for (size_t i = 0; i < lo->ncols; i++) {
        const char *v = r->v[i];
        switch (lo->cols[i]) {
        case K_INDEX:
            if (v && !absent(v)) {
                if (gi_parse_int64(v, 0, 65535, &idx) == GI_OK)
                    g->index = (int)idx;
                else
                    gi_obs_warn(out, "line %zu: index \"%.32s\" is not an index; left absent",
                                lineno, v);
            }
            break;
        case K_BUS:
            if (v && !absent(v) && gi_pci_normalize(v, g->pci_bus_id) != 0) {
                g->pci_bus_id[0] = '\0';
                gi_obs_warn(out, "line %zu: bus_id \"%.32s\" is not a PCI bus id; left absent",
                            lineno, v);
            }
            break;
        case K_NAME:
            take_str(r, i, board, sizeof board, "name", lineno, out);
            break;
        case K_SERIAL:
            take_str(r, i, g->serial, sizeof g->serial, "serial", lineno, out);
            break;
        case K_UUID:
            take_str(r, i, g->uuid, sizeof g->uuid, "uuid", lineno, out);
            break;
        case K_DRIVER:
            take_str(r, i, g->driver, sizeof g->driver, "driver_version", lineno, out);
            break;
        case K_MTOT:
            take_num(r, i, U_MIB, &g->memory_total_mib, "memory.total", lineno, out);
            break;
        case K_MUSED:
            take_num(r, i, U_MIB, &g->memory_used_mib, "memory.used", lineno, out);
            break;
        case K_MFREE:
            take_num(r, i, U_MIB, &free_mib, "memory.free", lineno, out);
            break;
        case K_UTIL:
            take_num(r, i, U_PCT, &g->util_gpu_pct, "utilization.aip", lineno, out);
            break;
        case K_TEMP:
            take_num(r, i, U_C, &g->temp_c, "temperature.aip", lineno, out);
            break;
        case K_POWER:
            take_num(r, i, U_W, &g->power_w, "power.draw", lineno, out);
            break;
        case K_POWER_MAX:
            take_num(r, i, U_W, &g->power_limit_w, "power.max", lineno, out);
            break;
        case K_ECC_CV:
            take_count(r, i, &cv, "ecc.errors.corrected.volatile.total", lineno, out);
            break;
        case K_ECC_CA:
            take_count(r, i, &ca, "ecc.errors.corrected.aggregate.total", lineno, out);
            break;
        case K_ECC_UV:
            take_count(r, i, &uv, "ecc.errors.uncorrected.volatile.total", lineno, out);
            break;
        case K_ECC_UA:
            take_count(r, i, &ua, "ecc.errors.uncorrected.aggregate.total", lineno, out);
            break;
        case K_MODULE:
        case K_OTHER:
            break;
        }
    }
    if (isnan(g->memory_used_mib) && !isnan(g->memory_total_mib) && !isnan(free_mib) &&
        free_mib <= g->memory_total_mib)
        g->memory_used_mib = g->memory_total_mib - free_mib;
    g->ecc_corrected = ca >= 0 ? ca : cv;
    g->ecc_uncorrected = ua >= 0 ? ua : uv;
    hlsmi_model_name(board, g->uuid, model, sizeof model);
    gi_strlcpy(g->name, model, sizeof g->name);
    if (g->uuid[0] == '\0' && g->serial[0] != '\0')
        snprintf(g->uuid, sizeof g->uuid, "HL-SN-%.80s", g->serial);
    if (g->uuid[0] == '\0')
        gi_obs_warn(out, "line %zu: AIP at bus %s has no uuid or serial; it cannot be reported",
                    lineno, g->pci_bus_id[0] ? g->pci_bus_id : "(unknown)");
    snprintf(who, sizeof who, "line %zu", lineno);
    gi_gpu_obs_sanitize(g, out, who);
    /* A reading far above the board's cap (1900 W on a 600 W card) is a
     * broken sensor, not a measurement. */
    cap = hlsmi_power_cap_w(g->name);
    if (cap > 0 && !isnan(g->power_w) && g->power_w > 2 * cap) {
        gi_obs_warn(out, "%s: power.draw %.0f W is above twice the %.0f W cap; left absent", who,
                    g->power_w, cap);
        g->power_w = NAN;
    }
}

int hlsmi_parse_query(const char *data, size_t len, const char *fields, struct gi_obs_set *out,
                      char *err, size_t errlen)
{
    const size_t ngpus0 = out->ngpus, nwarn0 = out->nwarnings, snap0 = ngpus0, snapw0 = nwarn0;
    struct lines L = {data, data + len, 0, NULL};
    struct layout lo;
    struct row *r = NULL;
    char *store = NULL, *cells[MAX_COLS], header[MAX_LINE + 1] = "";
    int have_layout = 0, rc = GI_INVALID, too_long;
    char *line;

    if (len > HLSMI_MAX_INPUT) {
        fail(err, errlen, "input larger than %u bytes", HLSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    L.buf = malloc(MAX_LINE + 1);
    store = malloc(MAX_LINE + 2);
    r = malloc(sizeof *r);
    if (L.buf == NULL || store == NULL || r == NULL) {
        fail(err, errlen, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    if (fields) {
        size_t n;
        if (strlen(fields) > MAX_LINE) {
            fail(err, errlen, "field list too long");
            goto cleanup;
        }
        n = split_cells(fields, store, cells, MAX_COLS);
        if (build_layout(&lo, cells, n, 0, err, errlen) != 0)
            goto cleanup;
        have_layout = 1;
    }
    while ((line = lines_next(&L, &too_long)) != NULL) {
        size_t n;
        if (too_long) {
            fail(err, errlen, "line %zu: longer than %d bytes", L.lineno, MAX_LINE);
            goto cleanup;
        }
        if (blank(line))
            continue;
        if (!have_layout) {
            n = split_cells(line, store, cells, MAX_COLS);
            if (build_layout(&lo, cells, n, L.lineno, err, errlen) != 0)
                goto cleanup;
            gi_strlcpy(header, line, sizeof header);
            have_layout = 1;
            continue;
        }
        if (header[0] && strcmp(line, header) == 0)
            continue; /* loop mode may repeat the header */
        n = split_cells(line, store, cells, MAX_COLS);
        if (fields && is_header(&lo, cells, n))
            continue; /* a header although the caller expected none */
        {
            int idx = -1;
            int64_t v;
            for (size_t i = 0; i < lo.ncols && i < n; i++)
                if (lo.cols[i] == K_INDEX && gi_parse_int64(cells[i], 0, 65535, &v) == GI_OK)
                    idx = (int)v;
            /* An index seen already in this snapshot starts the next one
             * (loop mode): the newer rows replace the older. */
            for (size_t i = snap0; idx >= 0 && i < out->ngpus; i++)
                if (out->gpus[i].index == idx) {
                    out->ngpus = snap0;
                    gi_obs_warn_rewind(out, snapw0);
                    break;
                }
        }
        if (place(&lo, cells, n, r) != 0)
            gi_obs_warn(out,
                        "line %zu: %zu cells where the header has %zu; what cannot be placed "
                        "is absent",
                        L.lineno, n, lo.ncols);
        if (row_all_absent(&lo, r))
            continue;
        {
            struct gi_gpu_obs *g = gi_obs_add_gpu(out);
            if (g == NULL) {
                fail(err, errlen, "line %zu: too many AIPs", L.lineno);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            row_to_gpu(&lo, r, g, L.lineno, out);
        }
    }
    if (!have_layout && !fields) {
        /* No output at all: zero AIPs. */
        rc = GI_OK;
        goto cleanup;
    }
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    free(L.buf);
    free(store);
    free(r);
    return rc;
}

/* ---- summary table -------------------------------------------------------- */

/* Splits s on blanks into at most cap tokens (s is modified). */
static size_t tokens(char *s, char **tok, size_t cap)
{
    size_t n = 0;

    while (*s && n < cap) {
        while (*s == ' ' || *s == '\t')
            *s++ = '\0';
        if (*s == '\0')
            break;
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
    }
    return n;
}

static int all_digits(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

struct aip {
    int index;
    char bus[GI_BUS_LEN];
};

/* A device row "|   0  HL-225   N/A  | 0000:4d:00.0     N/A | …": the
 * AIP index and its bus id. Returns 1 when line is one. */
static int device_row(const char *line, struct aip *a)
{
    char buf[512], *cell2, *tok[8];
    const char *bar1, *bar2;
    size_t n;
    int64_t idx;

    if (line[0] != '|' || (bar1 = strchr(line + 1, '|')) == NULL ||
        (bar2 = strchr(bar1 + 1, '|')) == NULL || (size_t)(bar2 - line) >= sizeof buf)
        return 0;
    memcpy(buf, line + 1, (size_t)(bar2 - line - 1));
    buf[bar2 - line - 1] = '\0';
    buf[bar1 - line - 1] = '\0';
    cell2 = buf + (bar1 - line);
    n = tokens(buf, tok, 8);
    if (n < 2 || !all_digits(tok[0]) || gi_parse_int64(tok[0], 0, 65535, &idx) != GI_OK ||
        isdigit((unsigned char)tok[1][0]))
        return 0;
    n = tokens(cell2, tok, 8);
    if (n < 1 || gi_pci_normalize(tok[0], a->bus) != 0)
        return 0;
    a->index = (int)idx;
    return 1;
}

/* A process row "|   0   10   C   python name   1024MiB   |". Fills p
 * (but not its GPU) and *aip; returns 1 for a process, 0 for a row
 * without one (all N/A), -1 when the line is not a process row. */
static int process_row(char *line, struct gi_proc_obs *p, int *aip, struct gi_obs_set *out,
                       size_t lineno)
{
    char *inner, *end, *tok[64], copy[1024];
    const char *mem, *name_from, *name_to;
    size_t n, len;
    int64_t v;
    int mem_tokens = 1;

    if (line[0] != '|')
        return -1;
    inner = line + 1;
    end = strrchr(inner, '|');
    if (end == NULL)
        return -1;
    *end = '\0';
    len = strlen(inner);
    if (len >= sizeof copy)
        return -1;
    memcpy(copy, inner, len + 1);
    n = tokens(copy, tok, 64);
    if (n < 4 || !all_digits(tok[0]) || gi_parse_int64(tok[0], 0, 65535, &v) != GI_OK)
        return -1;
    *aip = (int)v;
    /* The memory is the last token ("1024MiB", "N/A") or the last two
     * ("1024", "MiB"). */
    mem = tok[n - 1];
    if (n >= 5 && (strcmp(mem, "MiB") == 0 || strcmp(mem, "MB") == 0) && all_digits(tok[n - 2])) {
        mem_tokens = 2;
        mem = tok[n - 2];
    }
    if (absent(tok[1]) && absent(mem) && (n - mem_tokens <= 3 || absent(tok[3])))
        return 0;
    p->pid = -1;
    if (!absent(tok[1])) {
        if (gi_parse_int64(tok[1], 0, INT64_C(4194304) * 1024, &v) == GI_OK)
            p->pid = v;
        else
            gi_obs_warn(out, "line %zu: pid \"%.32s\" is not a process id; anonymous", lineno,
                        tok[1]);
    }
    if (!absent(mem)) {
        double d;
        if (parse_num(mem, U_MIB, &d) == 0)
            p->used_mib = d;
        else
            gi_obs_warn(out, "line %zu: memory \"%.32s\" is not a size; left absent", lineno, mem);
    }
    /* The name is the text between the type and the memory, as printed. */
    name_from = inner + ((tok[2] - copy) + strlen(tok[2]));
    name_to = inner + (tok[n - mem_tokens] - copy);
    if (n - mem_tokens > 3 && name_to > name_from) {
        char name[GI_LABEL_LEN];
        size_t nl = (size_t)(name_to - name_from);
        if (nl >= sizeof name)
            nl = sizeof name - 1;
        memcpy(name, name_from, nl);
        name[nl] = '\0';
        if (!absent(trim(name)) && put_str(p->name, sizeof p->name, trim(name)) != 0)
            gi_obs_warn(out, "line %zu: process name is not text; left absent", lineno);
    }
    return 1;
}

int hlsmi_parse_table(const char *data, size_t len, struct gi_obs_set *out, char *err,
                      size_t errlen)
{
    size_t nprocs0 = out->nprocs, nwarn0 = out->nwarnings, naips = 0;
    struct lines L = {data, data + len, 0, NULL};
    struct aip *aips = NULL;
    int in_procs = 0, seen_table = 0, too_long, rc = GI_INVALID;
    char *line;

    if (len > HLSMI_MAX_INPUT) {
        fail(err, errlen, "input larger than %u bytes", HLSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    L.buf = malloc(MAX_LINE + 1);
    aips = calloc(MAX_AIPS, sizeof *aips);
    if (L.buf == NULL || aips == NULL) {
        fail(err, errlen, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    while ((line = lines_next(&L, &too_long)) != NULL) {
        struct aip a;
        if (too_long) {
            fail(err, errlen, "line %zu: longer than %d bytes", L.lineno, MAX_LINE);
            goto cleanup;
        }
        if (strstr(line, "HL-SMI Version") || strstr(line, "AIP  Name") ||
            strstr(line, "Compute Processes:"))
            seen_table = 1;
        if (strstr(line, "Compute Processes:")) {
            in_procs = 1;
            continue;
        }
        if (in_procs == 1) {
            if (strncmp(line, "|===", 4) == 0)
                in_procs = 2; /* the column heads end here */
            continue;
        }
        if (in_procs == 2) {
            struct gi_proc_obs tmp, *p;
            int aip = -1, r;
            if (line[0] == '+') {
                in_procs = 0;
                continue;
            }
            memset(&tmp, 0, sizeof tmp);
            tmp.used_mib = NAN;
            tmp.uid = -1;
            r = process_row(line, &tmp, &aip, out, L.lineno);
            if (r <= 0)
                continue;
            if ((p = gi_obs_add_proc(out)) == NULL) {
                fail(err, errlen, "line %zu: too many processes", L.lineno);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            p->pid = tmp.pid;
            p->used_mib = tmp.used_mib;
            gi_strlcpy(p->name, tmp.name, sizeof p->name);
            for (size_t i = 0; i < naips; i++)
                if (aips[i].index == aip)
                    gi_strlcpy(p->pci_bus_id, aips[i].bus, sizeof p->pci_bus_id);
            if (p->pci_bus_id[0] == '\0') {
                gi_obs_warn(out, "line %zu: process on AIP %d, which the table does not list",
                            L.lineno, aip);
                continue;
            }
            for (size_t i = 0; i < out->ngpus; i++)
                if (strcmp(out->gpus[i].pci_bus_id, p->pci_bus_id) == 0 &&
                    out->gpus[i].parent_uuid[0] == '\0')
                    gi_strlcpy(p->gpu_uuid, out->gpus[i].uuid, sizeof p->gpu_uuid);
            continue;
        }
        if (device_row(line, &a) && naips < MAX_AIPS)
            aips[naips++] = a;
    }
    if (!seen_table && len > 0) {
        fail(err, errlen, "not an hl-smi table (no \"HL-SMI Version\" or \"Compute Processes\")");
        goto cleanup;
    }
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->nprocs = nprocs0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    free(L.buf);
    free(aips);
    return rc;
}

/* ---- per-device log (-q, -L) ---------------------------------------------- */

/* A block head "[0] AIP (accel0) 0000:43:00.0": its bus id. */
static int log_block(const char *line, char bus[GI_BUS_LEN])
{
    char buf[256], *tok[8];
    size_t n;

    while (*line == ' ')
        line++;
    if (line[0] != '[' || strlen(line) >= sizeof buf)
        return 0;
    memcpy(buf, line, strlen(line) + 1);
    n = tokens(buf, tok, 8);
    if (n < 3 || strcmp(tok[1], "AIP") != 0 || tok[0][strlen(tok[0]) - 1] != ']')
        return 0;
    return gi_pci_normalize(tok[n - 1], bus) == 0;
}

/* The firmware build in an SPI version value: the token holding "-fw-". */
static void firmware(const char *v, char *dst, size_t cap)
{
    char buf[256], *tok[16];
    size_t n;

    if (strlen(v) >= sizeof buf)
        return;
    memcpy(buf, v, strlen(v) + 1);
    n = tokens(buf, tok, 16);
    for (size_t i = 0; i < n; i++)
        if (strstr(tok[i], "-fw-") && put_str(dst, cap, tok[i]) == 0)
            return;
    if (put_str(dst, cap, v) != 0)
        dst[0] = '\0';
}

int hlsmi_parse_log(const char *data, size_t len, struct gi_obs_set *out, size_t first, char *err,
                    size_t errlen)
{
    struct lines L = {data, data + len, 0, NULL};
    struct gi_gpu_obs *g = NULL;
    int blocks = 0, too_long, rc = GI_INVALID;
    char *line;

    if (len > HLSMI_MAX_INPUT) {
        fail(err, errlen, "input larger than %u bytes", HLSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    if ((L.buf = malloc(MAX_LINE + 1)) == NULL) {
        fail(err, errlen, "out of memory");
        return GI_INTERNAL;
    }
    while ((line = lines_next(&L, &too_long)) != NULL) {
        char bus[GI_BUS_LEN], *colon, *key, *val;
        if (too_long)
            continue;
        if (log_block(line, bus)) {
            blocks++;
            g = NULL;
            for (size_t i = first; i < out->ngpus && g == NULL; i++)
                if (strcmp(out->gpus[i].pci_bus_id, bus) == 0 && out->gpus[i].parent_uuid[0] == 0)
                    g = &out->gpus[i];
            continue;
        }
        if (g == NULL || (colon = strchr(line, ':')) == NULL)
            continue;
        *colon = '\0';
        key = trim(line);
        val = trim(colon + 1);
        if (absent(val))
            continue;
        if (strcmp(key, "Firmware [SPI] Version") == 0)
            firmware(val, g->vbios, sizeof g->vbios);
        else if (strcmp(key, "Serial Number") == 0 && g->serial[0] == '\0' &&
                 put_str(g->serial, sizeof g->serial, val) != 0)
            g->serial[0] = '\0';
        else if (strcmp(key, "AIP UUID") == 0 && g->uuid[0] == '\0' &&
                 put_str(g->uuid, sizeof g->uuid, val) != 0)
            g->uuid[0] = '\0';
    }
    if (blocks == 0)
        fail(err, errlen, "no \"[N] AIP (accelN) <bus id>\" block: not hl-smi -q output");
    else
        rc = GI_OK;
    free(L.buf);
    return rc;
}
