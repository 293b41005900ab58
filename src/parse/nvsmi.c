/* nvidia-smi output parsers (CSV queries, -q -x XML, -L); see nvsmi.h.
 *
 * nvidia-smi CSV is not RFC 4180: fields are separated by ", ", never
 * quoted, and a process name may itself hold commas or quotes, so rows
 * are split here by column count rather than with parse/csv.c. */
#define _GNU_SOURCE
#include "parse/nvsmi.h"
#include "parse/nvsmi_int.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_COLS 256

/* ---- shared helpers ---------------------------------------------------- */

/* Writes a formatted message into err (if any). */
__attribute__((format(printf, 3, 4))) void nvsmi_fail(char *err, size_t errlen, const char *fmt,
                                                      ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Trims blanks and CRs at both ends of s in place; returns the start. */
char *nvsmi_trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Parses s (trimmed, not a placeholder) as a finite decimal number with
 * an optional unit suffix allowed for u; memory is scaled to MiB.
 * Returns 0, or -1 when s is not such a number. */
int nvsmi_parse_num(const char *s, enum nvsmi_unit u, double *out)
{
    char *end = NULL;
    double v, scale = 1.0;
    const char *rest;

    if (!(isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.'))
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
        if (u == U_MIB && strcmp(rest, "MiB") == 0)
            scale = 1.0;
        else if (u == U_MIB && strcmp(rest, "GiB") == 0)
            scale = 1024.0;
        else if (u == U_MIB && strcmp(rest, "KiB") == 0)
            scale = 1.0 / 1024.0;
        else if (u == U_W && strcmp(rest, "W") == 0)
            scale = 1.0;
        else if (u == U_PCT && strcmp(rest, "%") == 0)
            scale = 1.0;
        else if (u == U_C && strcmp(rest, "C") == 0)
            scale = 1.0;
        else if (u == U_MHZ && strcmp(rest, "MHz") == 0)
            scale = 1.0;
        else
            return -1;
    }
    v *= scale;
    if (v > 1e15 || v < (u == U_C ? -273.15 : 0.0))
        return -1;
    *out = v;
    return 0;
}

/* "Enabled" → 1, "Disabled" → 0; -2 for anything else. */
int nvsmi_parse_mig(const char *s)
{
    if (strcasecmp(s, "Enabled") == 0)
        return 1;
    if (strcasecmp(s, "Disabled") == 0)
        return 0;
    return -2;
}

/* Normalizes a PCI bus id; rejects strings with more separators than a
 * bus id has before gi_pci_normalize sees them. Returns 0 or -1. */
int nvsmi_norm_bus(const char *s, char out[GI_BUS_LEN])
{
    int seps = 0;

    for (const char *q = s; *q; q++)
        if (*q == ':' || *q == '.')
            seps++;
    if (seps > 3)
        return -1;
    return gi_pci_normalize(s, out);
}

/* Copies an identity string; -1 when it is too long or not clean text. */
int nvsmi_put_str(char *dst, size_t cap, const char *src)
{
    if (!gi_text_ok(src) || strchr(src, '\n') || strchr(src, '\r') || strchr(src, '\t'))
        return -1;
    return gi_strlcpy(dst, src, cap) ? 0 : -1;
}

/* Copies free text (a process name): invalid UTF-8 and control bytes
 * become '?', and it is cut at a character boundary to fit cap. */
void nvsmi_put_text(char *dst, size_t cap, const char *src)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;

    while (*p) {
        size_t n = 1;
        int ok = 1;
        if (*p < 0x20 || *p == 0x7f)
            ok = 0;
        else if (*p >= 0x80) {
            if ((*p & 0xe0) == 0xc0 && *p >= 0xc2)
                n = 2;
            else if ((*p & 0xf0) == 0xe0)
                n = 3;
            else if ((*p & 0xf8) == 0xf0 && *p <= 0xf4)
                n = 4;
            else
                ok = 0;
            for (size_t i = 1; ok && i < n; i++)
                if ((p[i] & 0xc0) != 0x80)
                    ok = 0;
            if (!ok)
                n = 1;
        }
        if (o + n >= cap)
            break;
        if (ok) {
            memcpy(dst + o, p, n);
        } else {
            dst[o] = '?';
            n = 1;
        }
        o += n;
        p += n;
    }
    dst[o] = '\0';
}

int nvsmi_parse_time(const char *s, int64_t *ms)
{
    /* YYYY/MM/DD HH:MM:SS[.fff] */
    static const char shape[] = "dddd/dd/dd dd:dd:dd";
    int v[6] = {0}, k = 0, frac = 0, fdig = 0;
    struct tm tm = {0};
    size_t i;

    for (i = 0; shape[i]; i++) {
        if (shape[i] == 'd') {
            if (!isdigit((unsigned char)s[i]))
                return GI_INVALID;
        } else if (s[i] != shape[i]) {
            return GI_INVALID;
        }
    }
    for (size_t j = 0; j < i; j++) {
        if (isdigit((unsigned char)s[j]))
            v[k] = v[k] * 10 + (s[j] - '0');
        else
            k++;
    }
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i])) {
            if (fdig < 3) {
                frac = frac * 10 + (s[i] - '0');
                fdig++;
            }
            i++;
        }
        if (fdig == 0)
            return GI_INVALID;
        while (fdig++ < 3)
            frac *= 10;
    }
    if (s[i] != '\0' || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 ||
        v[5] > 60)
        return GI_INVALID;
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];
    *ms = (int64_t)timegm(&tm) * 1000 + frac;
    return GI_OK;
}

/* ---- line reading -------------------------------------------------------- */

struct lines {
    const char *p, *end;
    size_t no; /* number of the line last returned, 1-based */
    char *buf; /* NVSMI_MAX_LINE + 1 bytes */
};

/* Starts reading data, skipping a UTF-8 byte-order mark. */
static int lines_init(struct lines *L, const char *data, size_t len)
{
    L->p = data;
    L->end = data + len;
    L->no = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        L->p += 3;
    L->buf = malloc(NVSMI_MAX_LINE + 1);
    return L->buf ? 0 : -1;
}

/* Copies the next line (without its LF/CRLF) into L->buf. Returns 1 for
 * a line, 0 at the end, -1 for an overlong line or a NUL byte. */
static int lines_next(struct lines *L, char *err, size_t errlen)
{
    const char *nl;
    size_t n;

    if (L->p >= L->end)
        return 0;
    L->no++;
    nl = memchr(L->p, '\n', (size_t)(L->end - L->p));
    n = (size_t)((nl ? nl : L->end) - L->p);
    if (n > NVSMI_MAX_LINE) {
        nvsmi_fail(err, errlen, "line %zu: longer than %d bytes", L->no, NVSMI_MAX_LINE);
        return -1;
    }
    if (memchr(L->p, '\0', n)) {
        nvsmi_fail(err, errlen, "line %zu: NUL byte", L->no);
        return -1;
    }
    memcpy(L->buf, L->p, n);
    L->buf[n] = '\0';
    if (n > 0 && L->buf[n - 1] == '\r')
        L->buf[n - 1] = '\0';
    L->p = nl ? nl + 1 : L->end;
    return 1;
}

/* ---- CSV queries --------------------------------------------------------- */

enum fid {
    F_IGNORE = 0,
    F_INDEX,
    F_UUID,
    F_NAME,
    F_SERIAL,
    F_BUS,
    F_DRIVER,
    F_VBIOS,
    F_HOST,
    F_TS,
    F_MEM_TOTAL,
    F_MEM_USED,
    F_UTIL_GPU,
    F_UTIL_MEM,
    F_TEMP,
    F_PDRAW,
    F_PAVG,
    F_PINST,
    F_PLIMIT,
    F_PENF,
    F_MIG,
    F_ECC_CV,
    F_ECC_CA,
    F_ECC_UV,
    F_ECC_UA,
    F_PID,
    F_PNAME,
    F_PMEM,
    F_COUNT
};

enum kind { K_STR, K_TEXT, K_NUM, K_INT, K_BUS, K_MIG, K_TIME };

static const struct {
    enum kind kind;
    enum nvsmi_unit unit;
} fid_info[F_COUNT] = {
    [F_IGNORE] = {K_STR, U_NONE},  [F_INDEX] = {K_INT, U_NONE},    [F_UUID] = {K_STR, U_NONE},
    [F_NAME] = {K_STR, U_NONE},    [F_SERIAL] = {K_STR, U_NONE},   [F_BUS] = {K_BUS, U_NONE},
    [F_DRIVER] = {K_STR, U_NONE},  [F_VBIOS] = {K_STR, U_NONE},    [F_HOST] = {K_STR, U_NONE},
    [F_TS] = {K_TIME, U_NONE},     [F_MEM_TOTAL] = {K_NUM, U_MIB}, [F_MEM_USED] = {K_NUM, U_MIB},
    [F_UTIL_GPU] = {K_NUM, U_PCT}, [F_UTIL_MEM] = {K_NUM, U_PCT},  [F_TEMP] = {K_NUM, U_C},
    [F_PDRAW] = {K_NUM, U_W},      [F_PAVG] = {K_NUM, U_W},        [F_PINST] = {K_NUM, U_W},
    [F_PLIMIT] = {K_NUM, U_W},     [F_PENF] = {K_NUM, U_W},        [F_MIG] = {K_MIG, U_NONE},
    [F_ECC_CV] = {K_INT, U_NONE},  [F_ECC_CA] = {K_INT, U_NONE},   [F_ECC_UV] = {K_INT, U_NONE},
    [F_ECC_UA] = {K_INT, U_NONE},  [F_PID] = {K_INT, U_NONE},      [F_PNAME] = {K_TEXT, U_NONE},
    [F_PMEM] = {K_NUM, U_MIB},
};

struct field_name {
    const char *name;
    enum fid id;
};

static const struct field_name gpu_fields[] = {
    {"index", F_INDEX},
    {"uuid", F_UUID},
    {"gpu_uuid", F_UUID},
    {"name", F_NAME},
    {"gpu_name", F_NAME},
    {"serial", F_SERIAL},
    {"gpu_serial", F_SERIAL},
    {"pci.bus_id", F_BUS},
    {"gpu_bus_id", F_BUS},
    {"driver_version", F_DRIVER},
    {"vbios_version", F_VBIOS},
    {"hostname", F_HOST},
    {"timestamp", F_TS},
    {"memory.total", F_MEM_TOTAL},
    {"memory.used", F_MEM_USED},
    {"utilization.gpu", F_UTIL_GPU},
    {"utilization.memory", F_UTIL_MEM},
    {"temperature.gpu", F_TEMP},
    {"power.draw", F_PDRAW},
    {"power.draw.average", F_PAVG},
    {"power.draw.instant", F_PINST},
    {"power.limit", F_PLIMIT},
    {"enforced.power.limit", F_PENF},
    {"mig.mode.current", F_MIG},
    {"ecc.errors.corrected.volatile.total", F_ECC_CV},
    {"ecc.errors.corrected.aggregate.total", F_ECC_CA},
    {"ecc.errors.uncorrected.volatile.total", F_ECC_UV},
    {"ecc.errors.uncorrected.aggregate.total", F_ECC_UA},
    {NULL, F_IGNORE},
};

static const struct field_name app_fields[] = {
    {"timestamp", F_TS},       {"gpu_name", F_NAME}, {"gpu_bus_id", F_BUS},
    {"gpu_serial", F_SERIAL},  {"gpu_uuid", F_UUID}, {"pid", F_PID},
    {"process_name", F_PNAME}, {"name", F_PNAME},    {"used_gpu_memory", F_PMEM},
    {"used_memory", F_PMEM},   {NULL, F_IGNORE},
};

/* The column layout of one query's output. */
struct layout {
    size_t ncols;
    enum fid col[MAX_COLS];
    char label[MAX_COLS][48]; /* column names, for messages */
    int elastic;              /* column that absorbs extra commas, -1 none */
};

/* Reduces a column name to its canonical field name in place: no
 * " [unit]" suffix, lower case, clocks_throttle_reasons.* renamed
 * clocks_event_reasons.*. Returns it, or NULL if it is not a name. */
static char *canon_name(char *s)
{
    char *br;
    static const char old[] = "clocks_throttle_reasons.";
    static const char cur[] = "clocks_event_reasons.";

    s = nvsmi_trim(s);
    br = strchr(s, '[');
    if (br) {
        size_t n = strlen(br);
        if (br[n - 1] != ']')
            return NULL;
        *br = '\0';
        s = nvsmi_trim(s);
    }
    if (*s == '\0')
        return NULL;
    for (char *q = s; *q; q++) {
        *q = (char)tolower((unsigned char)*q);
        if (!isalnum((unsigned char)*q) && *q != '_' && *q != '.')
            return NULL;
    }
    if (strncmp(s, old, sizeof old - 1) == 0) {
        /* the new prefix is shorter: shift the tail left */
        size_t tail = strlen(s + sizeof old - 1);
        memcpy(s, cur, sizeof cur - 1);
        memmove(s + sizeof cur - 1, s + sizeof old - 1, tail + 1);
    }
    return s;
}

/* Builds the layout from a header line or a field list (modified in
 * place). Returns 0, or -1 with err set. */
static int build_layout(struct layout *lo, char *names, const struct field_name *table,
                        size_t lineno, char *err, size_t errlen)
{
    char *p = names;

    lo->ncols = 0;
    lo->elastic = -1;
    for (;;) {
        char *comma = strchr(p, ',');
        char *name;
        if (comma)
            *comma = '\0';
        if (lo->ncols == MAX_COLS) {
            nvsmi_fail(err, errlen, "line %zu: more than %d columns", lineno, MAX_COLS);
            return -1;
        }
        name = canon_name(p);
        if (name == NULL) {
            nvsmi_fail(err, errlen, "line %zu: column %zu is not a field name", lineno,
                       lo->ncols + 1);
            return -1;
        }
        lo->col[lo->ncols] = F_IGNORE;
        for (const struct field_name *f = table; f->name; f++)
            if (strcmp(f->name, name) == 0)
                lo->col[lo->ncols] = f->id;
        if (lo->col[lo->ncols] == F_PNAME)
            lo->elastic = (int)lo->ncols;
        gi_strlcpy(lo->label[lo->ncols], name, sizeof lo->label[0]);
        lo->ncols++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* Splits a row into exactly lo->ncols values (pointers into line). When
 * the row has more commas than columns, the extras belong to the elastic
 * column. Returns 0, or -1 with *found set to the field count. */
static int split_row(const struct layout *lo, char *line, char **v, size_t *found)
{
    size_t commas = 0, n;

    for (char *q = line; *q; q++)
        if (*q == ',')
            commas++;
    n = commas + 1;
    *found = n;
    if (n < lo->ncols || (n > lo->ncols && lo->elastic < 0))
        return -1;
    if (n == lo->ncols) {
        char *p = line;
        for (size_t i = 0; i < n; i++) {
            char *c = strchr(p, ',');
            if (c)
                *c = '\0';
            v[i] = p;
            p = c ? c + 1 : p + strlen(p);
        }
        return 0;
    }
    /* Left of the elastic column, split at the first commas. */
    char *p = line;
    size_t e = (size_t)lo->elastic;
    for (size_t i = 0; i < e; i++) {
        char *c = strchr(p, ',');
        *c = '\0';
        v[i] = p;
        p = c + 1;
    }
    v[e] = p;
    /* Right of it, split at the last commas. */
    char *endp = p + strlen(p);
    for (size_t i = lo->ncols - 1; i > e; i--) {
        char *c = endp - 1;
        while (*c != ',')
            c--;
        *c = '\0';
        v[i] = c + 1;
        endp = c;
    }
    return 0;
}

/* Parsed values of one row, indexed by field id. */
struct row {
    int has[F_COUNT];
    double num[F_COUNT];
    int64_t i64[F_COUNT];
    const char *str[F_COUNT];
    char bus[GI_BUS_LEN];
};

/* Parses the row's values by kind; the first present value of a field
 * wins. A value that cannot be read ("ERR!", a word where a number
 * belongs, a wrong unit) is left absent and counted as a warning in out. */
static void read_row(const struct layout *lo, char **v, struct row *r, size_t lineno,
                     struct gi_obs_set *out)
{
    memset(r->has, 0, sizeof r->has);
    for (size_t i = 0; i < lo->ncols; i++) {
        enum fid id = lo->col[i];
        char *s = nvsmi_trim(v[i]);
        int64_t iv;
        double d;
        int m;

        if (id == F_IGNORE || r->has[id] || gi_is_placeholder(s))
            continue;
        switch (fid_info[id].kind) {
        case K_STR:
        case K_TEXT:
            r->str[id] = s;
            break;
        case K_NUM:
            if (nvsmi_parse_num(s, fid_info[id].unit, &d) < 0)
                goto bad;
            r->num[id] = d;
            break;
        case K_INT:
            if (gi_parse_int64(s, 0, INT64_C(1) << 53, &iv) != GI_OK)
                goto bad;
            r->i64[id] = iv;
            break;
        case K_BUS:
            if (nvsmi_norm_bus(s, r->bus) < 0)
                goto bad;
            break;
        case K_MIG:
            if ((m = nvsmi_parse_mig(s)) < 0)
                goto bad;
            r->i64[id] = m;
            break;
        case K_TIME:
            if (nvsmi_parse_time(s, &iv) != GI_OK)
                goto bad;
            r->i64[id] = iv;
            break;
        }
        r->has[id] = 1;
        continue;
    bad:
        gi_obs_warn(out, "line %zu: column %zu (%s): unreadable value \"%.40s\"; left absent",
                    lineno, i + 1, lo->label[i], s);
    }
}

/* Fills a GPU from a parsed row; what cannot be taken (text too long or
 * not text, a reading out of range) is left absent with a warning. */
static void row_to_gpu(const struct row *r, struct gi_gpu_obs *g, size_t lineno,
                       struct gi_obs_set *out)
{
    char who[32];

    static const struct {
        enum fid id;
        size_t off, cap;
        const char *what;
    } strs[] = {
        {F_UUID, offsetof(struct gi_gpu_obs, uuid), GI_UUID_LEN, "uuid"},
        {F_NAME, offsetof(struct gi_gpu_obs, name), GI_NAME_LEN, "name"},
        {F_SERIAL, offsetof(struct gi_gpu_obs, serial), GI_SERIAL_LEN, "serial"},
        {F_DRIVER, offsetof(struct gi_gpu_obs, driver), GI_NAME_LEN, "driver_version"},
        {F_VBIOS, offsetof(struct gi_gpu_obs, vbios), GI_NAME_LEN, "vbios_version"},
        {F_HOST, offsetof(struct gi_gpu_obs, hostname), GI_HOST_LEN, "hostname"},
    };

    g->vendor = GI_VENDOR_NVIDIA;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (r->has[strs[i].id] &&
            nvsmi_put_str((char *)g + strs[i].off, strs[i].cap, r->str[strs[i].id]) < 0) {
            ((char *)g + strs[i].off)[0] = '\0';
            gi_obs_warn(out, "line %zu: %s too long or not text; left absent", lineno,
                        strs[i].what);
        }
    }
    if (r->has[F_BUS])
        memcpy(g->pci_bus_id, r->bus, sizeof g->pci_bus_id);
    if (r->has[F_INDEX]) {
        if (r->i64[F_INDEX] > 65535)
            gi_obs_warn(out, "line %zu: index out of range; left absent", lineno);
        else
            g->index = (int)r->i64[F_INDEX];
    }
    if (r->has[F_TS])
        g->ts_ms = r->i64[F_TS];
    if (r->has[F_MEM_TOTAL])
        g->memory_total_mib = r->num[F_MEM_TOTAL];
    if (r->has[F_MEM_USED])
        g->memory_used_mib = r->num[F_MEM_USED];
    if (r->has[F_UTIL_GPU])
        g->util_gpu_pct = r->num[F_UTIL_GPU];
    if (r->has[F_UTIL_MEM])
        g->util_mem_pct = r->num[F_UTIL_MEM];
    if (r->has[F_TEMP])
        g->temp_c = r->num[F_TEMP];
    /* Instantaneous-ish draw first; v13 drivers only have avg/instant. */
    if (r->has[F_PDRAW])
        g->power_w = r->num[F_PDRAW];
    else if (r->has[F_PAVG])
        g->power_w = r->num[F_PAVG];
    else if (r->has[F_PINST])
        g->power_w = r->num[F_PINST];
    if (r->has[F_PENF])
        g->power_limit_w = r->num[F_PENF];
    else if (r->has[F_PLIMIT])
        g->power_limit_w = r->num[F_PLIMIT];
    if (r->has[F_MIG])
        g->mig_mode = (int)r->i64[F_MIG];
    if (r->has[F_ECC_CV])
        g->ecc_corrected = r->i64[F_ECC_CV];
    else if (r->has[F_ECC_CA])
        g->ecc_corrected = r->i64[F_ECC_CA];
    if (r->has[F_ECC_UV])
        g->ecc_uncorrected = r->i64[F_ECC_UV];
    else if (r->has[F_ECC_UA])
        g->ecc_uncorrected = r->i64[F_ECC_UA];
    snprintf(who, sizeof who, "line %zu", lineno);
    gi_gpu_obs_sanitize(g, out, who);
}

/* Fills a process from a parsed row. A pid that is hidden ("[Insufficient
 * Permissions]") or unreadable leaves an anonymous process (pid -1) that
 * still carries its GPU and memory. */
static void row_to_proc(const struct row *r, struct gi_proc_obs *p, size_t lineno,
                        struct gi_obs_set *out)
{
    if (r->has[F_UUID] && nvsmi_put_str(p->gpu_uuid, sizeof p->gpu_uuid, r->str[F_UUID]) < 0) {
        p->gpu_uuid[0] = '\0';
        gi_obs_warn(out, "line %zu: gpu_uuid too long or not text; left absent", lineno);
    }
    if (r->has[F_BUS])
        memcpy(p->pci_bus_id, r->bus, sizeof p->pci_bus_id);
    if (r->has[F_PID]) {
        if (r->i64[F_PID] < 1 || r->i64[F_PID] > UINT32_MAX)
            gi_obs_warn(out, "line %zu: pid out of range; reported as anonymous", lineno);
        else
            p->pid = r->i64[F_PID];
    }
    if (r->has[F_PNAME])
        nvsmi_put_text(p->name, sizeof p->name, r->str[F_PNAME]);
    if (r->has[F_PMEM]) {
        if (r->num[F_PMEM] <= GI_MEM_MIB_MAX)
            p->used_mib = r->num[F_PMEM];
        else
            gi_obs_warn(out, "line %zu: used memory out of range; left absent", lineno);
    }
}

/* True when every value of the row is a placeholder. */
static int all_placeholders(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!gi_is_placeholder(v[i]))
            return 0;
    return 1;
}

/* Parses "Unable to determine the device handle for GPU0000:3B:00.0: …"
 * (a GPU that fell off the bus) into a GPU known only by its bus id.
 * Returns 1 if the line had that form, 0 if not. */
static int lost_gpu_bus(const char *line, char bus[GI_BUS_LEN])
{
    static const char pre[] = "Unable to determine the device handle for GPU";
    char tmp[64];
    size_t n = 0;
    const char *p;

    if (strncmp(line, pre, sizeof pre - 1) != 0)
        return 0;
    p = line + sizeof pre - 1;
    while (*p == ' ')
        p++;
    /* The bus id ends at the ": " before the reason. */
    while (p[n] && !(p[n] == ':' && (p[n + 1] == ' ' || p[n + 1] == '\0')) && n < sizeof tmp - 1)
        n++;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    if (nvsmi_norm_bus(tmp, bus) < 0)
        bus[0] = '\0';
    return 1;
}

/* The shared body of the two CSV parsers. */
static int parse_query(const char *data, size_t len, const char *fields, int apps,
                       struct gi_obs_set *out, char *err, size_t errlen)
{
    struct lines L = {0};
    struct layout *lo = NULL;
    struct row r;
    char *list = NULL;
    char **v = NULL;
    size_t ngpus0 = out->ngpus, nprocs0 = out->nprocs, nwarn0 = out->nwarnings;
    int rc = GI_INVALID, have_layout = 0, k;
    const struct field_name *table = apps ? app_fields : gpu_fields;

    if (len > NVSMI_MAX_INPUT) {
        nvsmi_fail(err, errlen, "input larger than %u bytes", NVSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    lo = malloc(sizeof *lo);
    v = malloc(MAX_COLS * sizeof *v);
    if (lo == NULL || v == NULL || lines_init(&L, data, len) < 0) {
        nvsmi_fail(err, errlen, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    if (fields) {
        if (strlen(fields) > NVSMI_MAX_LINE || (list = strdup(fields)) == NULL) {
            nvsmi_fail(err, errlen, "field list too long");
            goto cleanup;
        }
        if (build_layout(lo, list, table, 0, err, errlen) < 0)
            goto cleanup;
        have_layout = 1;
    }
    while ((k = lines_next(&L, err, errlen)) == 1) {
        char *line = nvsmi_trim(L.buf);
        size_t found;
        char bus[GI_BUS_LEN];

        if (*line == '\0')
            continue;
        if (strcmp(line, "No devices were found") == 0)
            continue;
        if (lost_gpu_bus(line, bus)) {
            struct gi_gpu_obs *g;
            if (apps)
                continue;
            if ((g = gi_obs_add_gpu(out)) == NULL) {
                nvsmi_fail(err, errlen, "line %zu: too many GPUs", L.no);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            g->vendor = GI_VENDOR_NVIDIA;
            memcpy(g->pci_bus_id, bus, sizeof bus);
            continue;
        }
        if (!have_layout) {
            if (build_layout(lo, line, table, L.no, err, errlen) < 0)
                goto cleanup;
            have_layout = 1;
            continue;
        }
        if (apps && gi_is_placeholder(line))
            continue; /* a whole row reduced to "[Insufficient Permissions]" */
        if (split_row(lo, line, v, &found) < 0) {
            nvsmi_fail(err, errlen, "line %zu: expected %zu fields, found %zu", L.no, lo->ncols,
                       found);
            goto cleanup;
        }
        if (all_placeholders(v, lo->ncols))
            continue;
        read_row(lo, v, &r, L.no, out);
        if (apps) {
            struct gi_proc_obs *p = gi_obs_add_proc(out);
            if (p == NULL) {
                nvsmi_fail(err, errlen, "line %zu: too many processes", L.no);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            row_to_proc(&r, p, L.no, out);
        } else {
            struct gi_gpu_obs *g = gi_obs_add_gpu(out);
            if (g == NULL) {
                nvsmi_fail(err, errlen, "line %zu: too many GPUs", L.no);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            row_to_gpu(&r, g, L.no, out);
        }
    }
    if (k < 0)
        goto cleanup;
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        out->nprocs = nprocs0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    free(L.buf);
    free(list);
    free(lo);
    free(v);
    return rc;
}

int nvsmi_parse_query_gpu(const char *data, size_t len, const char *fields, struct gi_obs_set *out,
                          char *err, size_t errlen)
{
    return parse_query(data, len, fields, 0, out, err, errlen);
}

int nvsmi_parse_compute_apps(const char *data, size_t len, const char *fields,
                             struct gi_obs_set *out, char *err, size_t errlen)
{
    return parse_query(data, len, fields, 1, out, err, errlen);
}

/* ---- -L ------------------------------------------------------------------- */

/* Splits "…(UUID: X)" at its end: returns X (in place) and cuts the
 * line before " (UUID: ", or NULL if the line does not end that way. */
static char *cut_uuid(char *line)
{
    char *u = NULL, *q = line;
    size_t n;

    while ((q = strstr(q, "(UUID: ")) != NULL)
        u = q++;
    if (u == NULL)
        return NULL;
    n = strlen(u);
    if (u[n - 1] != ')')
        return NULL;
    u[n - 1] = '\0';
    *u = '\0';
    return nvsmi_trim(u + 7);
}

/* Reads a run of decimal digits at *p (at most 5) into *v. */
static int read_small(char **p, int *v)
{
    int n = 0, k = 0;

    while (isdigit((unsigned char)**p) && k < 6) {
        n = n * 10 + (**p - '0');
        (*p)++;
        k++;
    }
    if (k == 0 || k > 5)
        return -1;
    *v = n;
    return 0;
}

int nvsmi_parse_list(const char *data, size_t len, struct gi_obs_set *out, char *err, size_t errlen)
{
    struct lines L = {0};
    size_t ngpus0 = out->ngpus, nprocs0 = out->nprocs;
    size_t parent = (size_t)-1; /* position of the last GPU line's obs */
    int rc = GI_INVALID, k;

    if (len > NVSMI_MAX_INPUT) {
        nvsmi_fail(err, errlen, "input larger than %u bytes", NVSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    if (lines_init(&L, data, len) < 0) {
        nvsmi_fail(err, errlen, "out of memory");
        return GI_INTERNAL;
    }
    while ((k = lines_next(&L, err, errlen)) == 1) {
        char *line = nvsmi_trim(L.buf), *p, *uuid;
        struct gi_gpu_obs *g;
        int num;

        if (*line == '\0' || strcmp(line, "No devices found.") == 0 ||
            strcmp(line, "No devices found") == 0)
            continue;
        if ((uuid = cut_uuid(line)) == NULL || *uuid == '\0') {
            nvsmi_fail(err, errlen, "line %zu: not a GPU or MIG line: \"%.60s\"", L.no, line);
            goto cleanup;
        }
        if (strncmp(line, "GPU ", 4) == 0) {
            p = line + 4;
            if (read_small(&p, &num) < 0 || *p != ':') {
                nvsmi_fail(err, errlen, "line %zu: bad GPU number", L.no);
                goto cleanup;
            }
            if ((g = gi_obs_add_gpu(out)) == NULL) {
                nvsmi_fail(err, errlen, "line %zu: too many GPUs", L.no);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            g->vendor = GI_VENDOR_NVIDIA;
            g->index = num;
            if (nvsmi_put_str(g->uuid, sizeof g->uuid, uuid) < 0 ||
                nvsmi_put_str(g->name, sizeof g->name, nvsmi_trim(p + 1)) < 0) {
                nvsmi_fail(err, errlen, "line %zu: name or UUID too long or not text", L.no);
                goto cleanup;
            }
            parent = out->ngpus - 1;
        } else if (strncmp(line, "MIG ", 4) == 0) {
            char profile[GI_NAME_LEN];
            size_t plen;
            int gi = -1;

            if (parent == (size_t)-1) {
                nvsmi_fail(err, errlen, "line %zu: MIG device before any GPU", L.no);
                goto cleanup;
            }
            p = line + 4;
            while (*p == ' ')
                p++;
            plen = strcspn(p, " ");
            if (plen == 0 || plen >= sizeof profile) {
                nvsmi_fail(err, errlen, "line %zu: bad MIG profile", L.no);
                goto cleanup;
            }
            memcpy(profile, p, plen);
            profile[plen] = '\0';
            p += plen;
            while (*p == ' ')
                p++;
            if (strncmp(p, "Device", 6) != 0) {
                nvsmi_fail(err, errlen, "line %zu: expected \"Device N:\"", L.no);
                goto cleanup;
            }
            p += 6;
            while (*p == ' ')
                p++;
            if (read_small(&p, &num) < 0 || *p != ':' || *nvsmi_trim(p + 1) != '\0') {
                nvsmi_fail(err, errlen, "line %zu: bad MIG device number", L.no);
                goto cleanup;
            }
            /* Old drivers: MIG-GPU-<uuid>/<gi>/<ci>. */
            if (strncmp(uuid, "MIG-GPU-", 8) == 0) {
                char *s1 = strchr(uuid, '/');
                if (s1 != NULL) {
                    char *q = s1 + 1;
                    if (read_small(&q, &gi) < 0 || (*q != '/' && *q != '\0'))
                        gi = -1;
                }
            }
            if ((g = gi_obs_add_gpu(out)) == NULL) {
                nvsmi_fail(err, errlen, "line %zu: too many MIG devices", L.no);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            g->vendor = GI_VENDOR_NVIDIA;
            g->index = num;
            g->mig_mode = 1;
            g->mig_instance = gi;
            memcpy(g->mig_profile, profile, plen + 1);
            memcpy(g->parent_uuid, out->gpus[parent].uuid, GI_UUID_LEN);
            out->gpus[parent].mig_mode = 1;
            if (nvsmi_put_str(g->uuid, sizeof g->uuid, uuid) < 0) {
                nvsmi_fail(err, errlen, "line %zu: UUID too long or not text", L.no);
                goto cleanup;
            }
        } else {
            nvsmi_fail(err, errlen, "line %zu: not a GPU or MIG line", L.no);
            goto cleanup;
        }
    }
    if (k < 0)
        goto cleanup;
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        out->nprocs = nprocs0;
    }
    free(L.buf);
    return rc;
}
