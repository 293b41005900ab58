/* Slurm job accounting parsers; see slurm.h. */
#include "parse/slurm.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Values Slurm uses for "not set" in 32-bit fields (NO_VAL, INFINITE). */
#define SLURM_NO_VAL 0xfffffffeLL
#define SLURM_INFINITE 0xffffffffLL
/* A range inside one bracket expands to at most this many names. */
#define RANGE_MAX 100000

void slurm_jobs_free(struct slurm_jobs *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].nodes);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static void warn_once(struct slurm_jobs *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Counts one job or row left out, keeping the first reason. */
static void warn_once(struct slurm_jobs *l, const char *fmt, ...)
{
    va_list ap;

    l->skipped++;
    if (l->warning[0])
        return;
    va_start(ap, fmt);
    vsnprintf(l->warning, sizeof l->warning, fmt, ap);
    va_end(ap);
}

/* ---- Host lists ---------------------------------------------------------- */

struct hl {
    struct slurm_node *v;
    size_t n, cap, max;
};

static int hl_emit(struct hl *h, const char *name)
{
    if (h->n >= h->max)
        return GI_OK; /* the rest is dropped */
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 1;
        struct slurm_node *p = realloc(h->v, nc * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        h->v = p;
        h->cap = nc;
    }
    memset(&h->v[h->n], 0, sizeof h->v[h->n]);
    if (!gi_strlcpy(h->v[h->n].name, name, sizeof h->v[h->n].name))
        return GI_INVALID;
    h->v[h->n].nidx = -1;
    h->n++;
    return GI_OK;
}

/* Reads a decimal number of at most 9 digits at s[0..len). */
static bool digits(const char *s, size_t len, long *out)
{
    long v = 0;

    if (len == 0 || len > 9)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Emits prefix + each expansion of item[0..len) (brackets may repeat). */
static int hl_item(struct hl *h, const char *prefix, const char *item, size_t len)
{
    const char *lb = memchr(item, '[', len), *rb;
    char base[SLURM_NAME_LEN];
    int rc = GI_OK;

    if (!lb) {
        if (strlen(prefix) + len >= sizeof base)
            return GI_INVALID;
        snprintf(base, sizeof base, "%s%.*s", prefix, (int)len, item);
        return hl_emit(h, base);
    }
    rb = memchr(lb, ']', len - (size_t)(lb - item));
    if (!rb || rb == lb + 1)
        return GI_INVALID;
    if (strlen(prefix) + (size_t)(lb - item) >= sizeof base)
        return GI_INVALID;
    for (const char *r = lb + 1; r < rb && rc == GI_OK && h->n < h->max;) {
        const char *comma = memchr(r, ',', (size_t)(rb - r)), *dash;
        const char *end = comma ? comma : rb;
        long lo, hi;
        size_t width;
        dash = memchr(r, '-', (size_t)(end - r));
        if (!digits(r, (size_t)((dash ? dash : end) - r), &lo))
            return GI_INVALID;
        width = (size_t)((dash ? dash : end) - r);
        if (dash) {
            if (!digits(dash + 1, (size_t)(end - dash - 1), &hi) || hi < lo)
                return GI_INVALID;
        } else {
            hi = lo;
        }
        if (hi - lo > RANGE_MAX)
            return GI_INVALID;
        for (long v = lo; v <= hi && rc == GI_OK && h->n < h->max; v++) {
            char next[SLURM_NAME_LEN];
            int w = snprintf(next, sizeof next, "%s%.*s%0*ld", prefix, (int)(lb - item), item,
                             (int)width, v);
            if (w < 0 || (size_t)w >= sizeof next)
                return GI_INVALID;
            rc = hl_item(h, next, rb + 1, len - (size_t)(rb + 1 - item));
        }
        r = comma ? comma + 1 : rb;
    }
    return rc;
}

int slurm_hostlist_expand(const char *s, size_t max, struct slurm_node **out, size_t *n)
{
    struct hl h = {.max = max};
    int rc = GI_OK;

    *out = NULL;
    *n = 0;
    if (!s || !*s || strcmp(s, "None assigned") == 0 || strcmp(s, "(null)") == 0 ||
        strcmp(s, "None") == 0)
        return GI_OK;
    for (const char *p = s; *p && rc == GI_OK;) {
        size_t len = 0;
        int depth = 0;
        while (p[len] && (depth > 0 || p[len] != ',')) {
            if (p[len] == '[')
                depth++;
            else if (p[len] == ']')
                depth--;
            if (depth < 0 || depth > 1 || isspace((unsigned char)p[len]))
                rc = GI_INVALID;
            len++;
        }
        if (rc == GI_OK && (len == 0 || depth != 0))
            rc = GI_INVALID;
        if (rc == GI_OK)
            rc = hl_item(&h, "", p, len);
        p += len;
        if (*p == ',')
            p++;
    }
    if (rc != GI_OK) {
        free(h.v);
        return rc;
    }
    *out = h.v;
    *n = h.n;
    return GI_OK;
}

void slurm_node_idx(struct slurm_node *n, const char *list)
{
    n->nidx = 0;
    for (const char *r = list; *r && n->nidx < SLURM_MAX_IDX;) {
        size_t len = strcspn(r, ",");
        const char *dash = memchr(r, '-', len);
        long lo, hi;
        if (!digits(r, (size_t)((dash ? dash : r + len) - r), &lo)) {
            n->nidx = -1;
            return;
        }
        hi = lo;
        if (dash && (!digits(dash + 1, len - (size_t)(dash + 1 - r), &hi) || hi < lo)) {
            n->nidx = -1;
            return;
        }
        for (long v = lo; v <= hi && n->nidx < SLURM_MAX_IDX; v++)
            n->idx[n->nidx++] = (int)v;
        r += len;
        if (*r == ',')
            r++;
    }
    if (n->nidx == 0)
        n->nidx = -1;
}

/* ---- TRES ---------------------------------------------------------------- */

/* Calls fn for each name=value pair of a TRES string. */
static void tres_each(const char *tres,
                      void (*fn)(const char *name, size_t nlen, const char *value, size_t vlen,
                                 void *arg),
                      void *arg)
{
    for (const char *p = tres ? tres : ""; *p;) {
        size_t len = strcspn(p, ","), nlen;
        const char *eq = memchr(p, '=', len);
        if (eq) {
            nlen = (size_t)(eq - p);
            fn(p, nlen, eq + 1, len - nlen - 1, arg);
        }
        p += len;
        if (*p == ',')
            p++;
    }
}

static bool count_of(const char *v, size_t len, int64_t *out)
{
    char buf[32];

    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    return gi_parse_int64(buf, 0, 1000000000, out) == GI_OK;
}

struct tres_gpu {
    int64_t plain, typed;
    char *type;
    size_t tlen;
};

static void tres_gpu_one(const char *name, size_t nlen, const char *value, size_t vlen, void *arg)
{
    struct tres_gpu *t = arg;
    int64_t v;

    if (nlen == 8 && memcmp(name, "gres/gpu", 8) == 0) {
        if (count_of(value, vlen, &v))
            t->plain = v;
    } else if (nlen > 9 && memcmp(name, "gres/gpu:", 9) == 0 && count_of(value, vlen, &v)) {
        t->typed = (t->typed < 0 ? 0 : t->typed) + v;
        if (t->type && !t->type[0] && nlen - 9 < t->tlen) {
            memcpy(t->type, name + 9, nlen - 9);
            t->type[nlen - 9] = '\0';
        }
    }
}

void slurm_tres_gpus(const char *tres, int64_t *gpus, char *type, size_t tlen)
{
    struct tres_gpu t = {.plain = -1, .typed = -1, .type = type, .tlen = tlen};

    if (type && tlen)
        type[0] = '\0';
    tres_each(tres, tres_gpu_one, &t);
    /* Typed entries repeat the untyped count: they are only summed when
     * no untyped entry is recorded. */
    *gpus = t.plain >= 0 ? t.plain : t.typed;
}

struct tres_use {
    double util, mem;
};

/* A size with an optional K/M/G/T (binary) suffix, in MiB; plain bytes. */
static bool size_mib(const char *v, size_t len, double *out)
{
    char buf[48];
    double x, scale = 1.0 / (1024.0 * 1024.0);

    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    switch (toupper((unsigned char)buf[len - 1])) {
    case 'K':
        scale = 1.0 / 1024.0;
        break;
    case 'M':
        scale = 1.0;
        break;
    case 'G':
        scale = 1024.0;
        break;
    case 'T':
        scale = 1024.0 * 1024.0;
        break;
    default:
        len++;
    }
    buf[len - 1] = '\0';
    if (gi_parse_double(buf, 0, 1e18, &x) != GI_OK)
        return false;
    *out = x * scale;
    return true;
}

static void tres_use_one(const char *name, size_t nlen, const char *value, size_t vlen, void *arg)
{
    struct tres_use *t = arg;
    char buf[32];
    double v;

    if (nlen == 12 && memcmp(name, "gres/gpuutil", 12) == 0 && vlen > 0 && vlen < sizeof buf) {
        memcpy(buf, value, vlen);
        buf[vlen] = '\0';
        if (gi_parse_double(buf, 0, 1e9, &v) == GI_OK)
            t->util = v;
    } else if (nlen == 11 && memcmp(name, "gres/gpumem", 11) == 0 && size_mib(value, vlen, &v)) {
        t->mem = v;
    }
}

void slurm_tres_usage(const char *tres, double *util, double *mem_mib)
{
    struct tres_use t = {NAN, NAN};

    tres_each(tres, tres_use_one, &t);
    *util = t.util;
    *mem_mib = t.mem;
}

/* ---- Times and ids ------------------------------------------------------- */

int64_t slurm_time(const char *s)
{
    int64_t v;
    struct tm tm = {0};
    long f[6];
    static const size_t at[6] = {0, 5, 8, 11, 14, 17}, w[6] = {4, 2, 2, 2, 2, 2};

    if (!s || !*s || strcmp(s, "Unknown") == 0 || strcmp(s, "None") == 0)
        return -1;
    if (gi_parse_int64(s, 0, 253402300799LL, &v) == GI_OK)
        return v > 0 && v < SLURM_NO_VAL ? v : -1;
    /* %FT%T, local time without a zone: sacct runs with TZ=UTC. */
    if (strlen(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return -1;
    for (int i = 0; i < 6; i++)
        if (!digits(s + at[i], w[i], &f[i]))
            return -1;
    if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 60)
        return -1;
    tm.tm_year = (int)f[0] - 1900;
    tm.tm_mon = (int)f[1] - 1;
    tm.tm_mday = (int)f[2];
    tm.tm_hour = (int)f[3];
    tm.tm_min = (int)f[4];
    tm.tm_sec = (int)f[5];
    v = (int64_t)timegm(&tm);
    return v > 0 ? v : -1;
}

/* The state's first word ("CANCELLED by 129276" → CANCELLED), without a
 * truncation mark. */
static void state_word(char *dst, size_t len, const char *s)
{
    size_t n = strcspn(s ? s : "", " \t+");

    if (n >= len)
        n = len - 1;
    memcpy(dst, s ? s : "", n);
    dst[n] = '\0';
}

static bool state_is_open(const char *st)
{
    return strcmp(st, "RUNNING") == 0 || strcmp(st, "PENDING") == 0 ||
           strcmp(st, "SUSPENDED") == 0 || strcmp(st, "REQUEUED") == 0 ||
           strcmp(st, "RESIZING") == 0 || strcmp(st, "CONFIGURING") == 0 ||
           strcmp(st, "COMPLETING") == 0;
}

static int jobs_push(struct slurm_jobs *l, size_t *cap, struct slurm_job **out)
{
    if (l->n >= SLURM_MAX_JOBS)
        return GI_TOO_LARGE;
    if (l->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        struct slurm_job *p = realloc(l->items, nc * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        l->items = p;
        *cap = nc;
    }
    *out = &l->items[l->n];
    memset(*out, 0, sizeof **out);
    (*out)->gpus = (*out)->submit = (*out)->start = (*out)->end = (*out)->elapsed = -1;
    (*out)->gpu_util_sum = (*out)->gpu_mem_mib = NAN;
    return GI_OK;
}

/* Copies text that is valid and fits; otherwise leaves the field empty. */
static void text_field(char *dst, size_t len, const char *s)
{
    dst[0] = '\0';
    if (s && gi_text_ok(s) && !gi_strlcpy(dst, s, len))
        dst[0] = '\0';
}

static void nodes_field(struct slurm_job *j, const char *list)
{
    text_field(j->nodelist, sizeof j->nodelist, list);
    if (slurm_hostlist_expand(j->nodelist, SLURM_MAX_NODES, &j->nodes, &j->nnodes) != GI_OK) {
        j->nodes = NULL;
        j->nnodes = 0;
    }
}

/* ---- --parsable2 --------------------------------------------------------- */

enum col {
    C_IGNORE,
    C_IDRAW,
    C_ID,
    C_CLUSTER,
    C_USER,
    C_ACCOUNT,
    C_PARTITION,
    C_QOS,
    C_NODELIST,
    C_SUBMIT,
    C_START,
    C_END,
    C_ELAPSED,
    C_STATE,
    C_ALLOC,
    C_USE_TOT,
    C_USE_MAX,
    C_NAME,
    C__N
};

static const char *const col_names[C__N] = {
    "",           "JobIDRaw", "JobID",     "Cluster",        "User",           "Account",
    "Partition",  "QOS",      "NodeList",  "Submit",         "Start",          "End",
    "ElapsedRaw", "State",    "AllocTRES", "TRESUsageInTot", "TRESUsageInMax", "JobName"};

#define MAX_COLS 64

static enum col col_of(const char *name, size_t len)
{
    for (int c = 1; c < C__N; c++)
        if (strlen(col_names[c]) == len && strncasecmp(col_names[c], name, len) == 0)
            return (enum col)c;
    return C_IGNORE;
}

/* Reads one row's fields f[0..nf) into a job; returns false to skip it. */
static bool row_job(struct slurm_job *j, const enum col *cols, char **f, size_t nf,
                    struct slurm_jobs *l, size_t line)
{
    const char *v[C__N] = {0};

    for (size_t i = 0; i < nf; i++)
        if (cols[i] != C_IGNORE)
            v[cols[i]] = f[i];
    if (!v[C_IDRAW] || gi_parse_int64(v[C_IDRAW], 1, INT64_MAX, &j->id_raw) != GI_OK) {
        warn_once(l, "line %zu: JobIDRaw '%.40s' is not a job id", line,
                  v[C_IDRAW] ? v[C_IDRAW] : "");
        return false;
    }
    if (v[C_ID] && strchr(v[C_ID], '[')) {
        warn_once(l, "line %zu: array %.60s is pending (not split into tasks)", line, v[C_ID]);
        return false;
    }
    if (v[C_ID] && strchr(v[C_ID], '.')) {
        warn_once(l, "line %zu: %.60s is a job step, not an allocation", line, v[C_ID]);
        return false;
    }
    text_field(j->id, sizeof j->id, v[C_ID]);
    if (!j->id[0])
        snprintf(j->id, sizeof j->id, "%lld", (long long)j->id_raw);
    text_field(j->cluster, sizeof j->cluster, v[C_CLUSTER]);
    text_field(j->user, sizeof j->user, v[C_USER]);
    text_field(j->account, sizeof j->account, v[C_ACCOUNT]);
    text_field(j->partition, sizeof j->partition, v[C_PARTITION]);
    text_field(j->qos, sizeof j->qos, v[C_QOS]);
    text_field(j->name, sizeof j->name, v[C_NAME]);
    state_word(j->state, sizeof j->state, v[C_STATE]);
    nodes_field(j, v[C_NODELIST]);
    j->submit = slurm_time(v[C_SUBMIT]);
    j->start = slurm_time(v[C_START]);
    j->end = slurm_time(v[C_END]);
    if (!v[C_ELAPSED] || gi_parse_int64(v[C_ELAPSED], 0, INT64_MAX / 2, &j->elapsed) != GI_OK)
        j->elapsed = -1;
    slurm_tres_gpus(v[C_ALLOC], &j->gpus, j->gpu_type, sizeof j->gpu_type);
    if (v[C_USE_TOT]) {
        double m;
        slurm_tres_usage(v[C_USE_TOT], &j->gpu_util_sum, &m);
    }
    if (v[C_USE_MAX]) {
        double u;
        slurm_tres_usage(v[C_USE_MAX], &u, &j->gpu_mem_mib);
    }
    if (state_is_open(j->state))
        j->end = -1;
    return true;
}

int slurm_parse_parsable(const char *buf, size_t len, char delim, struct slurm_jobs *out, char *err,
                         size_t errlen)
{
    enum col cols[MAX_COLS];
    size_t ncols = 0, cap = 0, line = 0, lcap = 0;
    char *tmp = NULL, *f[MAX_COLS];
    int rc = GI_OK;

    memset(out, 0, sizeof *out);
    if (len > SLURM_MAX_BODY) {
        snprintf(err, errlen, "sacct printed more than %u bytes", SLURM_MAX_BODY);
        return GI_TOO_LARGE;
    }
    /* Without a header, the columns of SLURM_SACCT_FORMAT. */
    for (const char *p = SLURM_SACCT_FORMAT; *p; ncols++) {
        size_t n = strcspn(p, ",");
        cols[ncols] = col_of(p, n);
        p += n;
        if (*p == ',')
            p++;
    }
    for (size_t pos = 0; pos < len && rc == GI_OK;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos, nf = 0;
        struct slurm_job *j;
        char *p;
        line++;
        if (ll + 1 > lcap) {
            char *nb = realloc(tmp, ll + 1);
            if (!nb) {
                rc = GI_INTERNAL;
                break;
            }
            tmp = nb;
            lcap = ll + 1;
        }
        memcpy(tmp, buf + pos, ll);
        tmp[ll] = '\0';
        pos += ll + 1;
        if (ll > 0 && tmp[ll - 1] == '\r')
            tmp[--ll] = '\0';
        if (ll == 0 || memchr(tmp, '\0', ll))
            continue;
        /* Split at most ncols - 1 times: the rest is the last column. */
        for (p = tmp, f[nf++] = p; nf < ncols && (p = strchr(p, delim)); f[nf++] = p)
            *p++ = '\0';
        if (line == 1 && col_of(f[0], strlen(f[0])) == C_IDRAW && nf > 1 &&
            col_of(f[1], strlen(f[1])) != C_IGNORE) {
            /* A header line: it names the columns. */
            size_t n = 0;
            for (const char *q = buf; n < MAX_COLS;) {
                size_t fl = 0;
                while (q + fl < buf + len && q[fl] != delim && q[fl] != '\n' && q[fl] != '\r')
                    fl++;
                cols[n++] = col_of(q, fl);
                if (q + fl >= buf + len || q[fl] != delim)
                    break;
                q += fl + 1;
            }
            ncols = n;
            continue;
        }
        if (nf < ncols) {
            warn_once(out, "line %zu: %zu fields, expected %zu", line, nf, ncols);
            continue;
        }
        if (cols[ncols - 1] != C_NAME && strchr(f[ncols - 1], delim)) {
            warn_once(out, "line %zu: more than %zu fields", line, ncols);
            continue;
        }
        if ((rc = jobs_push(out, &cap, &j)) != GI_OK)
            break;
        if (row_job(j, cols, f, nf, out, line))
            out->n++;
        else
            free(j->nodes);
    }
    free(tmp);
    if (rc == GI_TOO_LARGE)
        snprintf(err, errlen, "more than %d jobs in one listing", SLURM_MAX_JOBS);
    else if (rc != GI_OK)
        snprintf(err, errlen, "out of memory");
    if (rc != GI_OK)
        slurm_jobs_free(out);
    return rc;
}

/* ---- JSON ---------------------------------------------------------------- */

/* A number given bare or wrapped ({"set","infinite","number"}). */
static bool jnum(const json_t *v, int64_t *out)
{
    if (json_is_object(v)) {
        if (json_is_false(json_object_get(v, "set")) ||
            json_is_true(json_object_get(v, "infinite")))
            return false;
        v = json_object_get(v, "number");
    }
    if (json_is_integer(v))
        *out = json_integer_value(v);
    else if (json_is_real(v) && isfinite(json_real_value(v)) && fabs(json_real_value(v)) < 9e15)
        *out = (int64_t)json_real_value(v);
    else
        return false;
    return true;
}

static int64_t jtime(const json_t *v)
{
    int64_t t;

    if (!jnum(v, &t) || t <= 0 || t >= SLURM_NO_VAL)
        return -1;
    return t;
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The first string of a string or an array of strings. */
static const char *jfirst(const json_t *v)
{
    if (json_is_array(v))
        v = json_array_get(v, 0);
    return json_string_value(v);
}

/* Sums gres/gpu (or typed, see slurm_tres_gpus) over a TRES list. */
static void jtres_gpus(const json_t *list, int64_t *gpus, char *type, size_t tlen)
{
    int64_t plain = -1, typed = -1, v;
    size_t i;
    json_t *t;

    json_array_foreach(list, i, t) {
        const char *ty = jstr(t, "type"), *name = jstr(t, "name");
        if (!ty || strcmp(ty, "gres") != 0 || !name || !jnum(json_object_get(t, "count"), &v) ||
            v < 0)
            continue;
        if (strcmp(name, "gpu") == 0) {
            plain = v;
        } else if (strncmp(name, "gpu:", 4) == 0) {
            typed = (typed < 0 ? 0 : typed) + v;
            if (!type[0] && gi_text_ok(name + 4))
                gi_strlcpy(type, name + 4, tlen);
        }
    }
    *gpus = plain >= 0 ? plain : typed;
}

/* A gres usage value from a TRES list ("gpuutil", "gpumem"), NAN absent. */
static double jtres_value(const json_t *list, const char *name)
{
    size_t i;
    json_t *t;
    int64_t v;

    json_array_foreach(list, i, t) {
        const char *ty = jstr(t, "type"), *nm = jstr(t, "name");
        if (ty && strcmp(ty, "gres") == 0 && nm && strcmp(nm, name) == 0 &&
            jnum(json_object_get(t, "count"), &v) && v >= 0)
            return (double)v;
    }
    return NAN;
}

/* GPU indexes from a slurmrestd gres_detail entry ("gpu:a100:4(IDX:0-3)"). */
static void gres_idx(struct slurm_node *n, const char *detail)
{
    const char *g = detail ? strstr(detail, "gpu") : NULL, *idx, *end;
    char list[256];

    if (!g || !(idx = strstr(g, "(IDX:")))
        return;
    idx += 5;
    end = strchr(idx, ')');
    if (!end || (size_t)(end - idx) >= sizeof list || strncmp(idx, "N/A", 3) == 0)
        return;
    memcpy(list, idx, (size_t)(end - idx));
    list[end - idx] = '\0';
    slurm_node_idx(n, list);
}

/* Whether the document comes from a plugin whose job time.start is the
 * eligible time (dbv0.0.37; dbv0.0.38 before 22.05.8). */
static bool start_is_eligible(const json_t *meta)
{
    const json_t *plugin = json_object_get(meta, "plugin");
    const char *type = jstr(plugin, "type"), *rel;
    const json_t *sl = json_object_get(meta, "Slurm");
    long major = 0, minor = 0, micro = 0;
    char *end;

    if (!sl)
        sl = json_object_get(meta, "slurm");
    if (!type)
        return false;
    if (strstr(type, "dbv0.0.37"))
        return true;
    if (!strstr(type, "dbv0.0.38"))
        return false;
    rel = jstr(sl, "release");
    if (!rel)
        return true;
    major = strtol(rel, &end, 10);
    if (*end == '.')
        minor = strtol(end + 1, &end, 10);
    if (*end == '.')
        micro = strtol(end + 1, &end, 10);
    return major < 22 || (major == 22 && (minor < 5 || (minor == 5 && micro < 8)));
}

/* Reads one job object; false to skip it. */
static bool json_job(struct slurm_job *j, const json_t *o, bool eligible_bug, struct slurm_jobs *l,
                     size_t i)
{
    const json_t *time = json_object_get(o, "time"), *arr = json_object_get(o, "array");
    const json_t *het = json_object_get(o, "het"), *tres = json_object_get(o, "tres");
    const json_t *steps = json_object_get(o, "steps"), *st, *v;
    int64_t aj = 0, at = -1, hj = 0, ho = -1, x;
    const char *task = NULL;
    size_t k;

    if (!json_is_object(o) || !jnum(json_object_get(o, "job_id"), &j->id_raw) || j->id_raw <= 0) {
        warn_once(l, "jobs[%zu]: no job_id", i);
        return false;
    }
    /* Arrays and heterogeneous jobs: sacct nests them, the controller
     * flattens them. */
    if (arr) {
        if (jnum(json_object_get(arr, "job_id"), &x))
            aj = x;
        if (jnum(json_object_get(arr, "task_id"), &x) && x >= 0 && x < SLURM_NO_VAL)
            at = x;
        task = jstr(arr, "task");
    } else {
        if (jnum(json_object_get(o, "array_job_id"), &x))
            aj = x;
        if (jnum(json_object_get(o, "array_task_id"), &x) && x >= 0 && x < SLURM_NO_VAL)
            at = x;
        task = jstr(o, "array_task_string");
    }
    if (het) {
        if (jnum(json_object_get(het, "job_id"), &x))
            hj = x;
        if (jnum(json_object_get(het, "job_offset"), &x) && x >= 0 && x < SLURM_NO_VAL)
            ho = x;
    } else {
        if (jnum(json_object_get(o, "het_job_id"), &x))
            hj = x;
        if (jnum(json_object_get(o, "het_job_offset"), &x) && x >= 0 && x < SLURM_NO_VAL)
            ho = x;
    }
    if (aj > 0 && at >= 0)
        snprintf(j->id, sizeof j->id, "%lld_%lld", (long long)aj, (long long)at);
    else if (aj > 0 && task && *task) {
        warn_once(l, "jobs[%zu]: array %lld_[%.40s] is pending (not split into tasks)", i,
                  (long long)aj, task);
        return false;
    } else if (hj > 0 && ho >= 0)
        snprintf(j->id, sizeof j->id, "%lld+%lld", (long long)hj, (long long)ho);
    else
        snprintf(j->id, sizeof j->id, "%lld", (long long)j->id_raw);
    text_field(j->cluster, sizeof j->cluster, jstr(o, "cluster"));
    text_field(j->user, sizeof j->user, jstr(o, "user") ? jstr(o, "user") : jstr(o, "user_name"));
    text_field(j->account, sizeof j->account, jstr(o, "account"));
    text_field(j->partition, sizeof j->partition, jstr(o, "partition"));
    text_field(j->qos, sizeof j->qos, jstr(o, "qos"));
    text_field(j->name, sizeof j->name, jstr(o, "name"));
    st = json_object_get(o, "state");
    state_word(j->state, sizeof j->state,
               st ? jfirst(json_object_get(st, "current"))
                  : jfirst(json_object_get(o, "job_state")));
    nodes_field(j, jstr(o, "nodes"));
    if (time) {
        j->submit = jtime(json_object_get(time, "submission"));
        j->start = jtime(json_object_get(time, "start"));
        j->end = jtime(json_object_get(time, "end"));
        if (!jnum(json_object_get(time, "elapsed"), &j->elapsed) || j->elapsed < 0)
            j->elapsed = -1;
    } else {
        j->submit = jtime(json_object_get(o, "submit_time"));
        j->start = jtime(json_object_get(o, "start_time"));
        j->end = jtime(json_object_get(o, "end_time"));
    }
    if (tres)
        jtres_gpus(json_object_get(tres, "allocated"), &j->gpus, j->gpu_type, sizeof j->gpu_type);
    else if (jstr(o, "tres_alloc_str"))
        slurm_tres_gpus(jstr(o, "tres_alloc_str"), &j->gpus, j->gpu_type, sizeof j->gpu_type);
    /* Steps: the earliest start (the job's own is the eligible time on
     * old plugins) and the GPU usage (TRESUsageIn is tres.requested). */
    {
        int64_t first = -1;
        json_array_foreach(steps, k, v) {
            const json_t *req = json_object_get(json_object_get(v, "tres"), "requested");
            int64_t s0 = jtime(json_object_get(json_object_get(v, "time"), "start"));
            double u = jtres_value(json_object_get(req, "total"), "gpuutil");
            double m = jtres_value(json_object_get(req, "max"), "gpumem");
            if (s0 > 0 && (first < 0 || s0 < first))
                first = s0;
            if (!isnan(u) && (isnan(j->gpu_util_sum) || u > j->gpu_util_sum))
                j->gpu_util_sum = u;
            if (!isnan(m) && (isnan(j->gpu_mem_mib) || m / 1048576.0 > j->gpu_mem_mib))
                j->gpu_mem_mib = m / 1048576.0;
        }
        if (eligible_bug) {
            if (first > 0)
                j->start = first;
            else if (j->end > 0 && j->elapsed >= 0)
                j->start = j->end - j->elapsed;
            else
                j->start = -1;
        }
    }
    /* The controller's end_time of a running job is its time limit. */
    if (state_is_open(j->state))
        j->end = -1;
    /* Per-node GPU indexes, in the order of the node list. */
    json_array_foreach(json_object_get(o, "gres_detail"), k, v) {
        if (k < j->nnodes)
            gres_idx(&j->nodes[k], json_string_value(v));
    }
    return true;
}

int slurm_parse_json(const char *buf, size_t len, struct slurm_jobs *out, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = NULL, *jobs, *errors, *o;
    size_t cap = 0, i;
    bool bug;
    int rc = GI_OK;

    memset(out, 0, sizeof *out);
    if (len > SLURM_MAX_BODY) {
        snprintf(err, errlen, "the listing is larger than %u bytes", SLURM_MAX_BODY);
        return GI_TOO_LARGE;
    }
    if (!(doc = json_loadb(buf, len, 0, &je))) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return GI_INVALID;
    }
    jobs = json_object_get(doc, "jobs");
    errors = json_object_get(doc, "errors");
    if (!json_is_array(jobs)) {
        const json_t *e0 = json_array_get(errors, 0);
        const char *msg = jstr(e0, "description");
        if (!msg || !*msg)
            msg = jstr(e0, "error");
        snprintf(err, errlen, "no \"jobs\" list%s%.200s", msg ? ": " : "", msg ? msg : "");
        json_decref(doc);
        return GI_INVALID;
    }
    bug = start_is_eligible(json_object_get(doc, "meta"));
    json_array_foreach(jobs, i, o) {
        struct slurm_job *j;
        if ((rc = jobs_push(out, &cap, &j)) != GI_OK)
            break;
        if (json_job(j, o, bug, out, i))
            out->n++;
        else
            free(j->nodes);
    }
    json_decref(doc);
    if (rc == GI_TOO_LARGE)
        snprintf(err, errlen, "more than %d jobs in one listing", SLURM_MAX_JOBS);
    else if (rc != GI_OK)
        snprintf(err, errlen, "out of memory");
    if (rc != GI_OK)
        slurm_jobs_free(out);
    return rc;
}
