/* nvidia-smi's `-q -x` XML report (read with libxml2): the fallback when
 * the driver refuses the CSV query; see nvsmi.h. Degrades per field like
 * the CSV parsers. */
#include "parse/nvsmi.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/nvsmi_int.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define XML_TEXT_MAX 1024

/* ---- -q -x XML ------------------------------------------------------------ */

/* Error context: which <gpu> is being read, and the set that counts the
 * values left absent because they could not be read. */
struct xctx {
    char *err;
    size_t errlen;
    int gpu; /* position of the current <gpu>, 0-based */
    struct gi_obs_set *out;
};

/* First element child of n called name; NULL if none (or n is NULL). */
static xmlNode *xchild(xmlNode *n, const char *name)
{
    if (n == NULL)
        return NULL;
    for (xmlNode *c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, name) == 0)
            return c;
    return NULL;
}

/* Follows a "a/b/c" path of element names from n; NULL if any is missing. */
static xmlNode *xpath(xmlNode *n, const char *path)
{
    char part[64];

    while (n && *path) {
        const char *slash = strchr(path, '/');
        size_t len = slash ? (size_t)(slash - path) : strlen(path);
        if (len >= sizeof part)
            return NULL;
        memcpy(part, path, len);
        part[len] = '\0';
        n = xchild(n, part);
        path += len + (slash ? 1 : 0);
    }
    return n;
}

/* Copies the trimmed text directly inside n (text and CDATA children
 * only: entity references are never expanded) into buf. An absent n
 * gives "". Returns 0, or -1 when the text is longer than cap - 1. */
static int xtext(xmlNode *n, char *buf, size_t cap)
{
    size_t o = 0;
    char *t;

    buf[0] = '\0';
    if (n == NULL)
        return 0;
    for (xmlNode *c = n->children; c; c = c->next) {
        size_t len;
        if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) || !c->content)
            continue;
        len = strlen((const char *)c->content);
        if (o + len >= cap)
            return -1;
        memcpy(buf + o, c->content, len);
        o += len;
        buf[o] = '\0';
    }
    t = nvsmi_trim(buf);
    if (t != buf)
        memmove(buf, t, strlen(t) + 1);
    return 0;
}

/* Reads a number with unit u at path under n into *out: NAN when absent,
 * a placeholder, or unreadable (then counted as a warning). Returns 0. */
static int xnum(struct xctx *x, xmlNode *n, const char *path, enum nvsmi_unit u, double *out)
{
    char buf[XML_TEXT_MAX];

    *out = NAN;
    if (xtext(xpath(n, path), buf, sizeof buf) < 0) {
        gi_obs_warn(x->out, "gpu %d: <%s>: text too long; left absent", x->gpu, path);
        return 0;
    }
    if (gi_is_placeholder(buf))
        return 0;
    if (nvsmi_parse_num(buf, u, out) < 0) {
        *out = NAN;
        gi_obs_warn(x->out, "gpu %d: <%s>: unreadable value \"%.40s\"; left absent", x->gpu, path,
                    buf);
    }
    return 0;
}

/* Reads a whole count at path under n into *out: -1 when absent or
 * unreadable (then counted as a warning). Returns 0. */
static int xint(struct xctx *x, xmlNode *n, const char *path, int64_t max, int64_t *out)
{
    char buf[XML_TEXT_MAX];

    *out = -1;
    if (xtext(xpath(n, path), buf, sizeof buf) < 0) {
        gi_obs_warn(x->out, "gpu %d: <%s>: text too long; left absent", x->gpu, path);
        return 0;
    }
    if (gi_is_placeholder(buf))
        return 0;
    if (gi_parse_int64(buf, 0, max, out) != GI_OK) {
        *out = -1;
        gi_obs_warn(x->out, "gpu %d: <%s>: unreadable value \"%.40s\"; left absent", x->gpu, path,
                    buf);
    }
    return 0;
}

/* Copies identity text at path under n into dst: "" when absent, or too
 * long or not text (then counted as a warning). Returns 0. */
static int xstr(struct xctx *x, xmlNode *n, const char *path, char *dst, size_t cap)
{
    char buf[XML_TEXT_MAX];

    if (xtext(xpath(n, path), buf, sizeof buf) < 0 ||
        (!gi_is_placeholder(buf) && nvsmi_put_str(dst, cap, buf) < 0)) {
        dst[0] = '\0';
        gi_obs_warn(x->out, "gpu %d: <%s>: too long or not text; left absent", x->gpu, path);
    }
    return 0;
}

/* Sums one ECC section (<volatile> or <aggregate>): the old
 * single_bit/double_bit totals, or the sram_/dram_ correctable and
 * uncorrectable counters of newer drivers. */
static int xecc(struct xctx *x, xmlNode *sec, int64_t *corr, int64_t *uncorr)
{
    int64_t v;

    *corr = *uncorr = -1;
    if (sec == NULL)
        return 0;
    if (xchild(sec, "single_bit") || xchild(sec, "double_bit")) {
        if (xint(x, sec, "single_bit/total", INT64_C(1) << 53, corr) < 0 ||
            xint(x, sec, "double_bit/total", INT64_C(1) << 53, uncorr) < 0)
            return -1;
        return 0;
    }
    for (xmlNode *c = sec->children; c; c = c->next) {
        const char *nm = (const char *)c->name;
        int64_t *acc;
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (strstr(nm, "_uncorrectable"))
            acc = uncorr;
        else if (strstr(nm, "_correctable"))
            acc = corr;
        else
            continue;
        if (xint(x, sec, nm, INT64_C(1) << 53, &v) < 0)
            return -1;
        if (v >= 0)
            *acc = (*acc < 0 ? 0 : *acc) + v;
    }
    return 0;
}

/* Reads <remapped_rows> (Ampere and later; "N/A" text on older GPUs):
 * remapped_row_corr / _unc counts and the Yes/No of remapped_row_pending
 * and remapped_row_failure. What is absent or unreadable stays absent. */
static void xremap(struct xctx *x, xmlNode *gpu, struct gi_gpu_obs *g)
{
    static const char *const flags[] = {"remapped_rows/remapped_row_pending",
                                        "remapped_rows/remapped_row_failure"};
    char buf[XML_TEXT_MAX];

    xint(x, gpu, "remapped_rows/remapped_row_corr", INT64_C(1) << 40, &g->remap_corrected);
    xint(x, gpu, "remapped_rows/remapped_row_unc", INT64_C(1) << 40, &g->remap_uncorrectable);
    for (size_t i = 0; i < 2; i++) {
        int *dst = i == 0 ? &g->remap_pending : &g->remap_failure;
        if (xtext(xpath(gpu, flags[i]), buf, sizeof buf) < 0 || gi_is_placeholder(buf))
            continue;
        if (strcasecmp(buf, "Yes") == 0)
            *dst = 1;
        else if (strcasecmp(buf, "No") == 0)
            *dst = 0;
        else
            gi_obs_warn(x->out, "gpu %d: <%s>: unreadable value \"%.40s\"; left absent", x->gpu,
                        flags[i], buf);
    }
}

/* Reads power draw and limit from whichever section this driver writes. */
static int xpower(struct xctx *x, xmlNode *gpu, struct gi_gpu_obs *g)
{
    static const char *const secs[] = {"gpu_power_readings", "power_readings"};
    static const char *const draws[] = {"power_draw", "average_power_draw", "instant_power_draw"};
    static const char *const limits[] = {"enforced_power_limit", "current_power_limit",
                                         "power_limit"};
    double d;

    for (size_t s = 0; s < 2; s++) {
        xmlNode *sec = xchild(gpu, secs[s]);
        if (sec == NULL)
            continue;
        for (size_t i = 0; i < 3 && isnan(g->power_w); i++) {
            if (xnum(x, sec, draws[i], U_W, &d) < 0)
                return -1;
            g->power_w = d;
        }
        for (size_t i = 0; i < 3 && isnan(g->power_limit_w); i++) {
            if (xnum(x, sec, limits[i], U_W, &d) < 0)
                return -1;
            g->power_limit_w = d;
        }
    }
    return 0;
}

/* Parses the root timestamp "Fri Jul  3 22:22:27 2026" (read as UTC)
 * into ms; 0 when it has another shape. */
static int64_t xtimestamp(const char *s)
{
    static const char mons[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    char w[5][16];
    int n = 0;
    struct tm tm = {0};
    int64_t day, year, hh, mm, ss;

    while (*s && n < 5) {
        size_t k = 0;
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        while (*s && *s != ' ' && k < sizeof w[0] - 1)
            w[n][k++] = *s++;
        w[n++][k] = '\0';
    }
    if (n != 5 || strlen(w[1]) != 3 || strlen(w[3]) != 8 || w[3][2] != ':' || w[3][5] != ':')
        return 0;
    const char *m = strstr(mons, w[1]);
    if (m == NULL || (m - mons) % 3 != 0)
        return 0;
    w[3][2] = w[3][5] = '\0';
    if (gi_parse_int64(w[2], 1, 31, &day) != GI_OK ||
        gi_parse_int64(w[4], 1970, 9999, &year) != GI_OK ||
        gi_parse_int64(w[3], 0, 23, &hh) != GI_OK ||
        gi_parse_int64(w[3] + 3, 0, 59, &mm) != GI_OK ||
        gi_parse_int64(w[3] + 6, 0, 60, &ss) != GI_OK)
        return 0;
    tm.tm_year = (int)year - 1900;
    tm.tm_mon = (int)((m - mons) / 3);
    tm.tm_mday = (int)day;
    tm.tm_hour = (int)hh;
    tm.tm_min = (int)mm;
    tm.tm_sec = (int)ss;
    return (int64_t)timegm(&tm) * 1000;
}

/* Reads one <gpu> element: the GPU, its MIG devices, its processes. */
static int xgpu(struct xctx *x, xmlNode *gpu, const char *driver, int64_t ts,
                struct gi_obs_set *out)
{
    struct gi_gpu_obs *g = gi_obs_add_gpu(out);
    char uuid[GI_UUID_LEN], bus[GI_BUS_LEN], buf[XML_TEXT_MAX];
    xmlNode *n;
    int64_t c, u;
    xmlChar *id;

    if (g == NULL) {
        nvsmi_fail(x->err, x->errlen, "gpu %d: too many GPUs", x->gpu);
        return GI_TOO_LARGE;
    }
    g->vendor = GI_VENDOR_NVIDIA;
    g->index = x->gpu;
    g->ts_ms = ts;
    gi_strlcpy(g->driver, driver, sizeof g->driver);
    if (xstr(x, gpu, "product_name", g->name, sizeof g->name) < 0 ||
        xstr(x, gpu, "serial", g->serial, sizeof g->serial) < 0 ||
        xstr(x, gpu, "uuid", g->uuid, sizeof g->uuid) < 0 ||
        xstr(x, gpu, "vbios_version", g->vbios, sizeof g->vbios) < 0)
        return GI_INVALID;
    /* Bus id: pci/pci_bus_id, else the id attribute. */
    if (xtext(xpath(gpu, "pci/pci_bus_id"), buf, sizeof buf) < 0)
        buf[0] = '\0';
    if (gi_is_placeholder(buf) && (id = xmlGetProp(gpu, (const xmlChar *)"id")) != NULL) {
        gi_strlcpy(buf, (const char *)id, sizeof buf);
        xmlFree(id);
    }
    if (!gi_is_placeholder(buf) && nvsmi_norm_bus(buf, g->pci_bus_id) < 0) {
        g->pci_bus_id[0] = '\0';
        gi_obs_warn(out, "gpu %d: bad PCI bus id \"%.40s\"; left absent", x->gpu, buf);
    }
    if (xnum(x, gpu, "fb_memory_usage/total", U_MIB, &g->memory_total_mib) < 0 ||
        xnum(x, gpu, "fb_memory_usage/used", U_MIB, &g->memory_used_mib) < 0 ||
        xnum(x, gpu, "utilization/gpu_util", U_PCT, &g->util_gpu_pct) < 0 ||
        xnum(x, gpu, "utilization/memory_util", U_PCT, &g->util_mem_pct) < 0 ||
        xnum(x, gpu, "temperature/gpu_temp", U_C, &g->temp_c) < 0 || xpower(x, gpu, g) < 0)
        return GI_INVALID;
    if (xecc(x, xpath(gpu, "ecc_errors/volatile"), &c, &u) < 0)
        return GI_INVALID;
    g->ecc_corrected = c;
    g->ecc_uncorrected = u;
    if (xecc(x, xpath(gpu, "ecc_errors/aggregate"), &c, &u) < 0)
        return GI_INVALID;
    if (g->ecc_corrected < 0)
        g->ecc_corrected = c;
    if (g->ecc_uncorrected < 0)
        g->ecc_uncorrected = u;
    xremap(x, gpu, g);
    if (xtext(xpath(gpu, "mig_mode/current_mig"), buf, sizeof buf) < 0)
        buf[0] = '\0';
    if (!gi_is_placeholder(buf)) {
        if ((g->mig_mode = nvsmi_parse_mig(buf)) < 0) {
            g->mig_mode = -1;
            gi_obs_warn(out,
                        "gpu %d: <mig_mode/current_mig>: unreadable value \"%.40s\"; left absent",
                        x->gpu, buf);
        }
    }
    {
        char who[32];
        snprintf(who, sizeof who, "gpu %d", x->gpu);
        gi_gpu_obs_sanitize(g, out, who);
    }
    memcpy(uuid, g->uuid, sizeof uuid);
    memcpy(bus, g->pci_bus_id, sizeof bus);
    /* g may move once more observations are appended. */
    n = xchild(gpu, "mig_devices");
    for (xmlNode *m = n ? n->children : NULL; m; m = m->next) {
        struct gi_gpu_obs *mg;
        int64_t v;
        if (m->type != XML_ELEMENT_NODE || strcmp((const char *)m->name, "mig_device") != 0)
            continue;
        if ((mg = gi_obs_add_gpu(out)) == NULL) {
            nvsmi_fail(x->err, x->errlen, "gpu %d: too many MIG devices", x->gpu);
            return GI_TOO_LARGE;
        }
        mg->vendor = GI_VENDOR_NVIDIA;
        mg->ts_ms = ts;
        mg->mig_mode = 1;
        memcpy(mg->parent_uuid, uuid, sizeof uuid);
        gi_strlcpy(mg->driver, driver, sizeof mg->driver);
        if (xstr(x, m, "uuid", mg->uuid, sizeof mg->uuid) < 0 ||
            xstr(x, m, "profile_name", mg->mig_profile, sizeof mg->mig_profile) < 0 ||
            xint(x, m, "index", 65535, &v) < 0)
            return GI_INVALID;
        mg->index = (int)v;
        if (xint(x, m, "gpu_instance_id", 65535, &v) < 0)
            return GI_INVALID;
        mg->mig_instance = (int)v;
        if (xnum(x, m, "fb_memory_usage/total", U_MIB, &mg->memory_total_mib) < 0 ||
            xnum(x, m, "fb_memory_usage/used", U_MIB, &mg->memory_used_mib) < 0)
            return GI_INVALID;
    }
    n = xchild(gpu, "processes");
    for (xmlNode *pi = n ? n->children : NULL; pi; pi = pi->next) {
        struct gi_proc_obs *p;
        char name[XML_TEXT_MAX];
        if (pi->type != XML_ELEMENT_NODE || strcmp((const char *)pi->name, "process_info") != 0)
            continue;
        if ((p = gi_obs_add_proc(out)) == NULL) {
            nvsmi_fail(x->err, x->errlen, "gpu %d: too many processes", x->gpu);
            return GI_TOO_LARGE;
        }
        memcpy(p->gpu_uuid, uuid, sizeof uuid);
        memcpy(p->pci_bus_id, bus, sizeof bus);
        if (xint(x, pi, "pid", UINT32_MAX, &p->pid) < 0 ||
            xnum(x, pi, "used_memory", U_MIB, &p->used_mib) < 0)
            return GI_INVALID;
        if (p->pid == 0)
            p->pid = -1; /* hidden: an anonymous process */
        if (xtext(xchild(pi, "process_name"), name, sizeof name) < 0) {
            gi_obs_warn(out, "gpu %d: <process_name>: text too long; left absent", x->gpu);
            name[0] = '\0';
        }
        if (!gi_is_placeholder(name))
            nvsmi_put_text(p->name, sizeof p->name, name);
    }
    return GI_OK;
}

int nvsmi_parse_xml(const char *data, size_t len, struct gi_obs_set *out, char *err, size_t errlen)
{
    xmlParserCtxtPtr ctxt = NULL;
    xmlDocPtr doc = NULL;
    xmlNode *root;
    char driver[GI_NAME_LEN] = "", buf[XML_TEXT_MAX];
    size_t ngpus0 = out->ngpus, nprocs0 = out->nprocs, nwarn0 = out->nwarnings;
    struct xctx x = {err, errlen, 0, out};
    int64_t ts = 0;
    int rc = GI_INVALID;

    if (len > NVSMI_MAX_INPUT) {
        nvsmi_fail(err, errlen, "input larger than %u bytes", NVSMI_MAX_INPUT);
        return GI_TOO_LARGE;
    }
    if (len > INT32_MAX || (ctxt = xmlNewParserCtxt()) == NULL) {
        nvsmi_fail(err, errlen, "cannot start the XML parser");
        return GI_INTERNAL;
    }
    /* No NOENT (entities stay unexpanded), no DTD loading, no network;
     * libxml2's default depth limit applies (no XML_PARSE_HUGE). */
    doc = xmlCtxtReadMemory(ctxt, data, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOBLANKS);
    if (doc == NULL) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        char msg[160] = "not well-formed";
        if (e && e->message) {
            gi_strlcpy(msg, e->message, sizeof msg);
            nvsmi_trim(msg);
        }
        nvsmi_fail(err, errlen, "line %d: XML: %s", e ? e->line : 0, msg);
        goto cleanup;
    }
    root = xmlDocGetRootElement(doc);
    if (root == NULL || strcmp((const char *)root->name, "nvidia_smi_log") != 0) {
        nvsmi_fail(err, errlen, "root element is <%.40s>, not <nvidia_smi_log>",
                   root ? (const char *)root->name : "");
        goto cleanup;
    }
    if (xtext(xchild(root, "driver_version"), buf, sizeof buf) == 0 && !gi_is_placeholder(buf) &&
        nvsmi_put_str(driver, sizeof driver, buf) < 0) {
        driver[0] = '\0';
        gi_obs_warn(out, "<driver_version>: too long or not text; left absent");
    }
    if (xtext(xchild(root, "timestamp"), buf, sizeof buf) == 0)
        ts = xtimestamp(buf);
    for (xmlNode *g = root->children; g; g = g->next) {
        if (g->type != XML_ELEMENT_NODE || strcmp((const char *)g->name, "gpu") != 0)
            continue;
        if ((rc = xgpu(&x, g, driver, ts, out)) != GI_OK)
            goto cleanup;
        x.gpu++;
    }
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        out->ngpus = ngpus0;
        out->nprocs = nprocs0;
        gi_obs_warn_rewind(out, nwarn0);
    }
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}
