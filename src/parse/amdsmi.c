/* rocm-smi / amd-smi JSON parsers; see amdsmi.h. */
#define _GNU_SOURCE
#include "parse/amdsmi.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How many '{'/'[' line starts to try before giving up on finding JSON. */
#define MAX_JSON_TRIES 16

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

enum uclass { C_MEM, C_W, C_C, C_PCT, C_J, C_NONE };

/* Scale from unit u to the class's base unit (MiB, W, C, %, J); 0 when
 * u is not a unit of that class. An empty unit means "already base". */
static double unit_scale(enum uclass c, const char *u)
{
    static const struct {
        enum uclass c;
        const char *u;
        double scale;
    } units[] = {
        {C_MEM, "B", 1.0 / 1048576.0},
        {C_MEM, "KB", 1.0 / 1024.0},
        {C_MEM, "KiB", 1.0 / 1024.0},
        {C_MEM, "MB", 1.0},
        {C_MEM, "MiB", 1.0},
        {C_MEM, "GB", 1024.0},
        {C_MEM, "GiB", 1024.0},
        {C_W, "W", 1.0},
        {C_W, "mW", 1e-3},
        {C_W, "uW", 1e-6},
        {C_C, "C", 1.0},
        {C_C,
         "\xC2\xB0"
         "C",
         1.0},
        {C_PCT, "%", 1.0},
        {C_J, "J", 1.0},
        {C_J, "mJ", 1e-3},
        {C_J, "uJ", 1e-6},
        {C_J, "kJ", 1e3},
    };

    if (u == NULL || *u == '\0')
        return 1.0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].c == c && strcmp(units[i].u, u) == 0)
            return units[i].scale;
    return 0.0;
}

/* Parses "139.0", "196592 MB", "45 %" into *out (base units of c; a
 * bare number is in dflt_unit). Returns 0, or -1 when it is not one. */
static int num_str(const char *s, enum uclass c, const char *dflt_unit, double *out)
{
    char *end = NULL;
    char unit[16];
    const char *rest;
    size_t n;
    double v, scale;

    while (*s == ' ')
        s++;
    if (!(isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.'))
        return -1;
    v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -1;
    for (const char *q = s; q < end; q++)
        if (!isdigit((unsigned char)*q) && !strchr("+-.eE", *q))
            return -1;
    rest = end;
    while (*rest == ' ')
        rest++;
    n = strlen(rest);
    while (n > 0 && rest[n - 1] == ' ')
        n--;
    if (n >= sizeof unit)
        return -1;
    memcpy(unit, rest, n);
    unit[n] = '\0';
    scale = unit_scale(c, n ? unit : dflt_unit);
    if (scale == 0.0)
        return -1;
    v *= scale;
    if (v > 1e15 || v < (c == C_C ? -273.15 : 0.0))
        return -1;
    *out = v;
    return 0;
}

/* Reads a numeric value: a JSON number, a string, or {"value","unit"}.
 * Returns 1 with *out set, 0 when absent (missing, null, placeholder),
 * -1 when malformed. */
static int num_value(json_t *v, enum uclass c, const char *dflt_unit, double *out)
{
    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_object(v)) {
        json_t *u = json_object_get(v, "unit");
        json_t *val = json_object_get(v, "value");
        if (val == NULL || json_is_object(val))
            return -1;
        if (u != NULL && !json_is_string(u))
            return -1;
        return num_value(val, c, u ? json_string_value(u) : dflt_unit, out);
    }
    if (json_is_number(v)) {
        double scale = unit_scale(c, dflt_unit), d = json_number_value(v) * scale;
        if (scale == 0.0 || !isfinite(d) || d > 1e15 || d < (c == C_C ? -273.15 : 0.0))
            return -1;
        *out = d;
        return 1;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (gi_is_placeholder(s))
            return 0;
        return num_str(s, c, dflt_unit, out) < 0 ? -1 : 1;
    }
    return -1;
}

/* Reads a text value (string, or an integer printed) into dst; "" when
 * absent or a placeholder. Returns 0, or -1 when too long or not text. */
static int str_value(json_t *v, char *dst, size_t cap)
{
    char buf[32];
    const char *s;

    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_object(v))
        v = json_object_get(v, "value");
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = buf;
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (v == NULL || json_is_null(v)) {
        return 0;
    } else {
        return -1;
    }
    while (*s == ' ')
        s++;
    if (gi_is_placeholder(s))
        return 0;
    if (strlen(s) != strcspn(s, "\r\n\t") || !gi_text_ok(s) || !gi_strlcpy(dst, s, cap))
        return -1;
    /* trailing blanks */
    for (size_t n = strlen(dst); n > 0 && dst[n - 1] == ' '; n--)
        dst[n - 1] = '\0';
    return 0;
}

/* Looks up key in obj ignoring ASCII case (rocm-smi's capitalisation
 * drifts between releases). Borrowed reference or NULL. */
static json_t *get_ci(json_t *obj, const char *key)
{
    const char *k;
    json_t *v;

    if (!json_is_object(obj))
        return NULL;
    if ((v = json_object_get(obj, key)) != NULL)
        return v;
    json_object_foreach(obj, k, v) {
        if (strcasecmp(k, key) == 0)
            return v;
    }
    return NULL;
}

/* Follows a dotted path of keys ("asic.market_name"). */
static json_t *get_path(json_t *obj, const char *path)
{
    char part[64];

    while (obj && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof part)
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        obj = json_is_object(obj) ? json_object_get(obj, part) : NULL;
        path += n + (dot ? 1 : 0);
    }
    return obj;
}

/* Lower-cases an AMD unique id so rocm-smi and amd-smi agree. */
static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* Parses the JSON in data, skipping warning lines before it. Returns a
 * new reference, or NULL with err set (line numbers count from the
 * start of data). */
static json_t *load_json(const char *data, size_t len, const char *what, char *err, size_t errlen)
{
    const char *p = data, *end = data + len;
    size_t line = 1, skipped_lines = 0;
    json_error_t je, first;
    int tries = 0, have_first = 0;

    while (p < end && tries < MAX_JSON_TRIES) {
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < end && (*q == '{' || *q == '[')) {
            json_t *j = json_loadb(q, (size_t)(end - q), JSON_DISABLE_EOF_CHECK, &je);
            tries++;
            if (j != NULL)
                return j;
            if (!have_first) {
                first = je;
                skipped_lines = line - 1;
                have_first = 1;
            }
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            break;
        p = nl + 1;
        line++;
    }
    if (have_first)
        fail(err, errlen, "%s: line %zu: JSON: %s", what, (size_t)first.line + skipped_lines,
             first.text);
    else
        fail(err, errlen, "%s: no JSON object or array found", what);
    return NULL;
}

/* Copies a string field; one that is too long or not text is left
 * absent and counted as a warning in out. Returns 0. */
static int take_str(json_t *v, char *dst, size_t cap, const char *where, const char *key,
                    struct gi_obs_set *out)
{
    if (str_value(v, dst, cap) < 0) {
        dst[0] = '\0';
        gi_obs_warn(out, "%s: \"%s\": too long or not text; left absent", where, key);
    }
    return 0;
}

/* Reads the first present of several numeric keys into *out (left as is
 * when none is present). getter is get_ci or get_path. */
static int take_num(json_t *obj, json_t *(*getter)(json_t *, const char *), const char *const *keys,
                    enum uclass c, const char *dflt_unit, double *out, const char *where,
                    struct gi_obs_set *set)
{
    /* A value that is not a number ("ERR!", a wrong unit) is left absent
     * with a warning, and the next key is tried. */
    for (; *keys; keys++) {
        double d;
        int r = num_value(getter(obj, *keys), c, dflt_unit, &d);
        if (r < 0)
            gi_obs_warn(set, "%s: \"%s\": not a number; left absent", where, *keys);
        if (r == 1) {
            *out = d;
            return 0;
        }
    }
    return 0;
}

/* Reads a PCI bus id; one that is not is left absent with a warning. */
static int take_bus(json_t *v, char out[GI_BUS_LEN], const char *where, const char *key,
                    struct gi_obs_set *set)
{
    char buf[64] = "";
    int seps = 0;

    if (str_value(v, buf, sizeof buf) < 0)
        goto bad;
    if (buf[0] == '\0')
        return 0;
    for (const char *q = buf; *q; q++)
        seps += (*q == ':' || *q == '.');
    if (seps > 3 || gi_pci_normalize(buf, out) < 0)
        goto bad;
    return 0;
bad:
    out[0] = '\0';
    gi_obs_warn(set, "%s: \"%s\": not a PCI bus id; left absent", where, key);
    return 0;
}

/* ---- rocm-smi ------------------------------------------------------------- */

struct card {
    int index;
    json_t *obj;
};

static int card_cmp(const void *a, const void *b)
{
    const struct card *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Fills one GPU from a rocm-smi card object. */
static int rocm_card(json_t *c, const char *where, const char *sys_driver, struct gi_gpu_obs *g,
                     struct gi_obs_set *set, char *err, size_t errlen)
{
    static const char *const k_util[] = {"GPU use (%)", NULL};
    static const char *const k_umem[] = {"GPU Memory Read/Write Activity (%)", "GPU memory use (%)",
                                         NULL};
    static const char *const k_mtot[] = {"VRAM Total Memory (B)", NULL};
    static const char *const k_mused[] = {"VRAM Total Used Memory (B)", NULL};
    static const char *const k_temp[] = {"Temperature (Sensor edge) (C)",
                                         "Temperature (Sensor junction) (C)", NULL};
    static const char *const k_pow[] = {"Current Socket Graphics Package Power (W)",
                                        "Average Graphics Package Power (W)", NULL};
    static const char *const k_plim[] = {"Max Graphics Package Power (W)", NULL};

    if (!json_is_object(c)) {
        fail(err, errlen, "%s: not an object", where);
        return -1;
    }
    g->vendor = GI_VENDOR_AMD;
    if (take_str(get_ci(c, "Card Series"), g->name, sizeof g->name, where, "Card Series", set) <
            0 ||
        take_str(get_ci(c, "Serial Number"), g->serial, sizeof g->serial, where, "Serial Number",
                 set) < 0 ||
        take_str(get_ci(c, "Unique ID"), g->uuid, sizeof g->uuid, where, "Unique ID", set) < 0 ||
        take_str(get_ci(c, "VBIOS version"), g->vbios, sizeof g->vbios, where, "VBIOS version",
                 set) < 0 ||
        take_str(get_ci(c, "Driver version"), g->driver, sizeof g->driver, where, "Driver version",
                 set) < 0 ||
        take_bus(get_ci(c, "PCI Bus"), g->pci_bus_id, where, "PCI Bus", set) < 0)
        return -1;
    lower(g->uuid);
    if (g->driver[0] == '\0')
        gi_strlcpy(g->driver, sys_driver, sizeof g->driver);
    if (take_num(c, get_ci, k_util, C_PCT, "%", &g->util_gpu_pct, where, set) < 0 ||
        take_num(c, get_ci, k_umem, C_PCT, "%", &g->util_mem_pct, where, set) < 0 ||
        take_num(c, get_ci, k_mtot, C_MEM, "B", &g->memory_total_mib, where, set) < 0 ||
        take_num(c, get_ci, k_mused, C_MEM, "B", &g->memory_used_mib, where, set) < 0 ||
        take_num(c, get_ci, k_temp, C_C, "C", &g->temp_c, where, set) < 0 ||
        take_num(c, get_ci, k_pow, C_W, "W", &g->power_w, where, set) < 0 ||
        take_num(c, get_ci, k_plim, C_W, "W", &g->power_limit_w, where, set) < 0)
        return -1;
    return 0;
}

int amdsmi_parse_rocm(const char *data, size_t len, struct gi_obs_set *out, char *err,
                      size_t errlen)
{
    json_t *root = NULL;
    struct card *cards = NULL;
    size_t ncards = 0, ngpus0 = out->ngpus, nwarn0 = out->nwarnings;
    char sys_driver[GI_NAME_LEN] = "";
    const char *key;
    json_t *val;
    int rc = GI_INVALID;

    if (len > AMDSMI_MAX_INPUT) {
        fail(err, errlen, "input larger than %u bytes", AMDSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    if ((root = load_json(data, len, "rocm-smi", err, errlen)) == NULL)
        goto cleanup;
    if (!json_is_object(root)) {
        fail(err, errlen, "rocm-smi: expected an object of cards");
        goto cleanup;
    }
    if (take_str(get_ci(get_ci(root, "system"), "Driver version"), sys_driver, sizeof sys_driver,
                 "system", "Driver version", out) < 0)
        goto cleanup;
    cards = calloc(json_object_size(root) + 1, sizeof *cards);
    if (cards == NULL) {
        fail(err, errlen, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    json_object_foreach(root, key, val) {
        int64_t idx;
        if (strncmp(key, "card", 4) != 0)
            continue; /* "system" and friends */
        if (gi_parse_int64(key + 4, 0, 65535, &idx) != GI_OK) {
            fail(err, errlen, "rocm-smi: bad card key \"%.40s\"", key);
            goto cleanup;
        }
        cards[ncards].index = (int)idx;
        cards[ncards].obj = val;
        ncards++;
    }
    qsort(cards, ncards, sizeof *cards, card_cmp);
    for (size_t i = 0; i < ncards; i++) {
        char where[32];
        struct gi_gpu_obs *g = gi_obs_add_gpu(out);
        snprintf(where, sizeof where, "card%d", cards[i].index);
        if (g == NULL) {
            fail(err, errlen, "%s: too many GPUs", where);
            rc = GI_TOO_LARGE;
            goto cleanup;
        }
        g->index = cards[i].index;
        if (rocm_card(cards[i].obj, where, sys_driver, g, out, err, errlen) < 0)
            goto cleanup;
        gi_gpu_obs_sanitize(g, out, where);
    }
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    free(cards);
    json_decref(root);
    return rc;
}

/* ---- amd-smi -------------------------------------------------------------- */

/* The list of per-GPU entries in either output form (borrowed), or NULL. */
static json_t *gpu_list(json_t *root)
{
    if (json_is_array(root))
        return root;
    if (json_is_object(root) && json_is_array(json_object_get(root, "gpu_data")))
        return json_object_get(root, "gpu_data");
    return NULL;
}

/* Finds (or appends) the GPU with this index among those added since
 * first. NULL past the cap. */
static struct gi_gpu_obs *gpu_for(struct gi_obs_set *out, size_t first, int index)
{
    struct gi_gpu_obs *g;

    for (size_t i = first; i < out->ngpus; i++)
        if (out->gpus[i].index == index)
            return &out->gpus[i];
    if ((g = gi_obs_add_gpu(out)) != NULL) {
        g->vendor = GI_VENDOR_AMD;
        g->index = index;
    }
    return g;
}

/* Reads one static entry's identity into g. */
static int amd_static(json_t *e, const char *where, struct gi_gpu_obs *g, struct gi_obs_set *set)
{
    static const char *const k_mem[] = {"vram.size", NULL};
    static const char *const k_plim[] = {"limit.max_power", NULL};
    char alt[GI_UUID_LEN] = "";

    if (take_str(get_path(e, "asic.market_name"), g->name, sizeof g->name, where,
                 "asic.market_name", set) < 0 ||
        take_str(get_path(e, "board.product_serial"), g->serial, sizeof g->serial, where,
                 "board.product_serial", set) < 0 ||
        take_str(get_path(e, "asic.asic_serial"), g->uuid, sizeof g->uuid, where,
                 "asic.asic_serial", set) < 0 ||
        take_str(get_path(e, "uuid"), alt, sizeof alt, where, "uuid", set) < 0 ||
        take_str(get_path(e, "driver.version"), g->driver, sizeof g->driver, where,
                 "driver.version", set) < 0 ||
        take_str(get_path(e, "vbios.version"), g->vbios, sizeof g->vbios, where, "vbios.version",
                 set) < 0 ||
        take_bus(get_path(e, "bus.bdf"), g->pci_bus_id, where, "bus.bdf", set) < 0)
        return -1;
    if (g->name[0] == '\0' && take_str(get_path(e, "board.product_name"), g->name, sizeof g->name,
                                       where, "board.product_name", set) < 0)
        return -1;
    if (g->vbios[0] == '\0' && take_str(get_path(e, "vbios.vbios_version"), g->vbios,
                                        sizeof g->vbios, where, "vbios.vbios_version", set) < 0)
        return -1;
    if (g->uuid[0] == '\0')
        memcpy(g->uuid, alt, sizeof alt);
    lower(g->uuid);
    if (take_num(e, get_path, k_mem, C_MEM, "MB", &g->memory_total_mib, where, set) < 0 ||
        take_num(e, get_path, k_plim, C_W, "W", &g->power_limit_w, where, set) < 0)
        return -1;
    return 0;
}

/* Reads one metric entry's live values into g. */
static int amd_metric(json_t *e, const char *where, struct gi_gpu_obs *g, struct gi_obs_set *set)
{
    static const char *const k_util[] = {"usage.gfx_activity", NULL};
    static const char *const k_umem[] = {"usage.umc_activity", NULL};
    static const char *const k_pow[] = {"power.socket_power", "power.average_socket_power",
                                        "power.current_socket_power", NULL};
    static const char *const k_temp[] = {"temperature.edge", "temperature.hotspot", NULL};
    static const char *const k_mtot[] = {"mem_usage.total_vram", NULL};
    static const char *const k_mused[] = {"mem_usage.used_vram", NULL};
    static const char *const k_energy[] = {"energy.total_energy_consumption", NULL};
    static const char *const k_ce[] = {"ecc.total_correctable_count", "ecc.total_correctable",
                                       NULL};
    static const char *const k_ue[] = {"ecc.total_uncorrectable_count", "ecc.total_uncorrectable",
                                       NULL};
    double ce = NAN, ue = NAN;

    if (take_num(e, get_path, k_util, C_PCT, "%", &g->util_gpu_pct, where, set) < 0 ||
        take_num(e, get_path, k_umem, C_PCT, "%", &g->util_mem_pct, where, set) < 0 ||
        take_num(e, get_path, k_pow, C_W, "W", &g->power_w, where, set) < 0 ||
        take_num(e, get_path, k_temp, C_C, "C", &g->temp_c, where, set) < 0 ||
        take_num(e, get_path, k_mtot, C_MEM, "MB", &g->memory_total_mib, where, set) < 0 ||
        take_num(e, get_path, k_mused, C_MEM, "MB", &g->memory_used_mib, where, set) < 0 ||
        take_num(e, get_path, k_energy, C_J, "J", &g->energy_j, where, set) < 0 ||
        take_num(e, get_path, k_ce, C_NONE, "", &ce, where, set) < 0 ||
        take_num(e, get_path, k_ue, C_NONE, "", &ue, where, set) < 0)
        return -1;
    if (!isnan(ce))
        g->ecc_corrected = (int64_t)ce;
    if (!isnan(ue))
        g->ecc_uncorrected = (int64_t)ue;
    return 0;
}

/* Reads one output (static or metric) into out, merging by index. */
static int amd_doc(const char *data, size_t len, int metric, size_t first, struct gi_obs_set *out,
                   char *err, size_t errlen)
{
    const char *what = metric ? "metric" : "static";
    json_t *root = load_json(data, len, what, err, errlen), *list, *e;
    size_t i;
    int rc = GI_INVALID;

    if (root == NULL)
        return GI_INVALID;
    if ((list = gpu_list(root)) == NULL) {
        fail(err, errlen, "%s: expected an array or {\"gpu_data\": [...]}", what);
        goto cleanup;
    }
    json_array_foreach(list, i, e) {
        char where[48];
        int64_t idx = (int64_t)i;
        json_t *gv = json_object_get(e, "gpu");
        struct gi_gpu_obs *g;

        snprintf(where, sizeof where, "%s entry %zu", what, i);
        if (!json_is_object(e)) {
            fail(err, errlen, "%s: not an object", where);
            goto cleanup;
        }
        if (gv != NULL) {
            if (!json_is_integer(gv) || json_integer_value(gv) < 0 ||
                json_integer_value(gv) > 65535) {
                fail(err, errlen, "%s: \"gpu\" is not an index", where);
                goto cleanup;
            }
            idx = json_integer_value(gv);
        }
        if ((g = gpu_for(out, first, (int)idx)) == NULL) {
            fail(err, errlen, "%s: too many GPUs", where);
            rc = GI_TOO_LARGE;
            goto cleanup;
        }
        if ((metric ? amd_metric : amd_static)(e, where, g, out) < 0)
            goto cleanup;
    }
    rc = GI_OK;
cleanup:
    json_decref(root);
    return rc;
}

int amdsmi_parse(const char *static_json, size_t static_len, const char *metric_json,
                 size_t metric_len, struct gi_obs_set *out, char *err, size_t errlen)
{
    size_t ngpus0 = out->ngpus, nwarn0 = out->nwarnings;
    int rc = GI_OK;

    if (static_len > AMDSMI_MAX_INPUT || metric_len > AMDSMI_MAX_INPUT) {
        fail(err, errlen, "input larger than %u bytes", AMDSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    if (static_json != NULL)
        rc = amd_doc(static_json, static_len, 0, ngpus0, out, err, errlen);
    if (rc == GI_OK && metric_json != NULL)
        rc = amd_doc(metric_json, metric_len, 1, ngpus0, out, err, errlen);
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    for (size_t i = ngpus0; i < out->ngpus; i++) {
        char who[32];
        snprintf(who, sizeof who, "gpu %d", out->gpus[i].index);
        gi_gpu_obs_sanitize(&out->gpus[i], out, who);
    }
    return rc;
}
