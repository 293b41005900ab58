/* dcgm-exporter samples to GPU observations; see dcgm.h.
 *
 * Records are found by key (UUID, else host + bus id, else host + index;
 * "/<GPU_I_ID>" appended for a MIG instance) through an open-addressing
 * hash, since the exporter lists every GPU once per metric family and
 * consecutive samples rarely share a GPU. Values that need several
 * metrics (memory total, ECC preference, utilization fallback) are kept
 * on the private record and settled in dcgm_finish. */
#include "parse/dcgm.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LEN (GI_UUID_LEN + GI_HOST_LEN + 32)

/* The metrics read, by name after "DCGM_FI_". */
enum field {
    F_GPU_UTIL,
    F_MEM_COPY_UTIL,
    F_FB_USED,
    F_FB_FREE,
    F_FB_RESERVED,
    F_GPU_TEMP,
    F_POWER,
    F_POWER_MGMT_LIMIT,
    F_POWER_ENFORCED,
    F_ENERGY,
    F_XID,
    F_SBE_VOL,
    F_DBE_VOL,
    F_SBE_AGG,
    F_DBE_AGG,
    F_GR_ACTIVE,
    F_REMAP_CORR,
    F_REMAP_UNC,
    F_REMAP_FAIL,
    F_COUNT
};

static const char *const field_names[F_COUNT] = {
    [F_GPU_UTIL] = "DEV_GPU_UTIL",
    [F_MEM_COPY_UTIL] = "DEV_MEM_COPY_UTIL",
    [F_FB_USED] = "DEV_FB_USED",
    [F_FB_FREE] = "DEV_FB_FREE",
    [F_FB_RESERVED] = "DEV_FB_RESERVED",
    [F_GPU_TEMP] = "DEV_GPU_TEMP",
    [F_POWER] = "DEV_POWER_USAGE",
    [F_POWER_MGMT_LIMIT] = "DEV_POWER_MGMT_LIMIT",
    [F_POWER_ENFORCED] = "DEV_ENFORCED_POWER_LIMIT",
    [F_ENERGY] = "DEV_TOTAL_ENERGY_CONSUMPTION",
    [F_XID] = "DEV_XID_ERRORS",
    [F_SBE_VOL] = "DEV_ECC_SBE_VOL_TOTAL",
    [F_DBE_VOL] = "DEV_ECC_DBE_VOL_TOTAL",
    [F_SBE_AGG] = "DEV_ECC_SBE_AGG_TOTAL",
    [F_DBE_AGG] = "DEV_ECC_DBE_AGG_TOTAL",
    [F_GR_ACTIVE] = "PROF_GR_ENGINE_ACTIVE",
    [F_REMAP_CORR] = "DEV_CORRECTABLE_REMAPPED_ROWS",
    [F_REMAP_UNC] = "DEV_UNCORRECTABLE_REMAPPED_ROWS",
    [F_REMAP_FAIL] = "DEV_ROW_REMAP_FAILURE",
};

/* A record being built: where its observation is, and the metrics that
 * are combined at the end (NAN when absent). */
struct dcgm_rec {
    char key[KEY_LEN];
    uint64_t hash;
    size_t obs;      /* index in out->gpus */
    size_t pod_head; /* first pod + 1, 0 none */
    size_t pod_last; /* last matched pod + 1, 0 none */
    size_t npods;
    double v[F_COUNT];
};

/* The labels of one sample that matter here; NULL when absent or a
 * placeholder. */
struct ids {
    const char *uuid, *gpu, *bus, *device, *model, *host, *driver, *serial, *vbios;
    const char *pod, *ns, *container, *gi_profile, *gi_id;
};

int dcgm_is_blank(double v)
{
    /* DCGM's sentinels sit at the top of each type's range: INT32_BLANK
     * 0x7ffffff0 and INT64_BLANK 0x7ffffffffffffff0 (the latter is 2^63
     * once a double) and FP64_BLANK 2^47, each followed by NOT_FOUND,
     * NOT_SUPPORTED and NOT_PERMISSIONED. */
    if (!isfinite(v))
        return 1;
    if (v >= 2147483632.0 && v <= 2147483635.0)
        return 1;
    if (v >= 140737488355328.0 && v <= 140737488355331.0)
        return 1;
    return v >= 9223372036854771712.0; /* 2^63 - 4096 and above */
}

void dcgm_begin(struct dcgm *d, struct gi_obs_set *out)
{
    memset(d, 0, sizeof *d);
    d->out = out;
}

void dcgm_free(struct dcgm *d)
{
    free(d->recs);
    free(d->slots);
    free(d->pods);
    free(d->pod_next);
    memset(d, 0, sizeof *d);
}

/* Copies src into dst (capacity cap), cutting an over-long value at a
 * UTF-8 character boundary. */
static void copy_field(char *dst, const char *src, size_t cap)
{
    size_t n = strlen(src);

    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Sets dst from v when dst is still empty and v is present. */
static void fill(char *dst, const char *v, size_t cap)
{
    if (dst[0] == '\0' && v != NULL)
        copy_field(dst, v, cap);
}

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603u;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* Doubles the hash table and reinserts every record; false out of
 * memory. */
static int rehash(struct dcgm *d)
{
    size_t n = d->nslots ? d->nslots * 2 : 256;
    size_t *s = calloc(n, sizeof *s);

    if (s == NULL)
        return 0;
    for (size_t r = 0; r < d->nrecs; r++) {
        size_t i = (size_t)d->recs[r].hash & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = r + 1;
    }
    free(d->slots);
    d->slots = s;
    d->nslots = n;
    return 1;
}

/* Finds the record for key, creating it (and its observation) when new.
 * Returns its index, or -1 with err->msg set. */
static long find_or_add(struct dcgm *d, const char *key, struct prom_error *err, int *st)
{
    uint64_t h = hash_key(key);
    size_t i;
    struct dcgm_rec *r;

    if (d->nslots) {
        for (i = (size_t)h & (d->nslots - 1); d->slots[i]; i = (i + 1) & (d->nslots - 1)) {
            r = &d->recs[d->slots[i] - 1];
            if (r->hash == h && strcmp(r->key, key) == 0)
                return (long)(d->slots[i] - 1);
        }
    }
    if (d->nrecs >= GI_OBS_MAX || d->out->ngpus >= GI_OBS_MAX) {
        snprintf(err->msg, sizeof err->msg, "more than %d GPU records", GI_OBS_MAX);
        *st = GI_TOO_LARGE;
        return -1;
    }
    if ((d->nrecs + 1) * 2 > d->nslots && !rehash(d))
        goto oom;
    if (d->nrecs == d->recs_cap) {
        size_t nc = d->recs_cap ? d->recs_cap * 2 : 64;
        struct dcgm_rec *nr = realloc(d->recs, nc * sizeof *nr);
        if (nr == NULL)
            goto oom;
        d->recs = nr;
        d->recs_cap = nc;
    }
    if (gi_obs_add_gpu(d->out) == NULL)
        goto oom;
    r = &d->recs[d->nrecs];
    memset(r, 0, sizeof *r);
    copy_field(r->key, key, sizeof r->key);
    r->hash = h;
    r->obs = d->out->ngpus - 1;
    for (int f = 0; f < F_COUNT; f++)
        r->v[f] = NAN;
    for (i = (size_t)h & (d->nslots - 1); d->slots[i]; i = (i + 1) & (d->nslots - 1))
        ;
    d->slots[i] = d->nrecs + 1;
    d->out->gpus[r->obs].vendor = GI_VENDOR_NVIDIA;
    return (long)d->nrecs++;
oom:
    snprintf(err->msg, sizeof err->msg, "out of memory");
    *st = GI_INTERNAL;
    return -1;
}

/* A label value that means something: not a placeholder. */
static const char *present(const char *v) { return gi_is_placeholder(v) ? NULL : v; }

/* A workload label: empty and DCGM's <<<…>>> strings mean none. */
static const char *workload(const char *v)
{
    return (v[0] == '\0' || strncmp(v, "<<<", 3) == 0) ? NULL : v;
}

/* Picks out the labels this consumer reads. Newer names win over the
 * older ones (pod over pod_name, UUID over uuid). */
static void read_ids(const struct prom_sample *s, struct ids *id)
{
    const char *old_uuid = NULL, *old_pod = NULL, *old_ns = NULL, *old_ctr = NULL;

    memset(id, 0, sizeof *id);
    for (size_t i = 0; i < s->nlabels; i++) {
        const char *n = s->labels[i].name, *v = s->labels[i].value;
        switch (n[0]) {
        case 'U':
            if (strcmp(n, "UUID") == 0)
                id->uuid = present(v);
            break;
        case 'u':
            if (strcmp(n, "uuid") == 0)
                old_uuid = present(v);
            break;
        case 'g':
            if (strcmp(n, "gpu") == 0)
                id->gpu = present(v);
            break;
        case 'p':
            if (strcmp(n, "pci_bus_id") == 0)
                id->bus = present(v);
            else if (strcmp(n, "pod") == 0)
                id->pod = workload(v);
            else if (strcmp(n, "pod_name") == 0)
                old_pod = workload(v);
            else if (strcmp(n, "pod_namespace") == 0)
                old_ns = workload(v);
            break;
        case 'd':
            if (strcmp(n, "device") == 0)
                id->device = present(v);
            break;
        case 'm':
            if (strcmp(n, "modelName") == 0)
                id->model = present(v);
            break;
        case 'H':
        case 'h':
            if (strcmp(n + 1, "ostname") == 0 && (id->host == NULL || n[0] == 'H'))
                id->host = present(v);
            break;
        case 'D':
            if (strcmp(n, "DCGM_FI_DRIVER_VERSION") == 0)
                id->driver = present(v);
            else if (strcmp(n, "DCGM_FI_DEV_SERIAL") == 0)
                id->serial = present(v);
            else if (strcmp(n, "DCGM_FI_DEV_VBIOS_VERSION") == 0)
                id->vbios = present(v);
            break;
        case 'n':
            if (strcmp(n, "namespace") == 0)
                id->ns = workload(v);
            break;
        case 'c':
            if (strcmp(n, "container") == 0)
                id->container = workload(v);
            else if (strcmp(n, "container_name") == 0)
                old_ctr = workload(v);
            break;
        case 'G':
            if (strcmp(n, "GPU_I_PROFILE") == 0)
                id->gi_profile = present(v);
            else if (strcmp(n, "GPU_I_ID") == 0)
                id->gi_id = present(v);
            break;
        default:
            break;
        }
    }
    if (id->uuid == NULL)
        id->uuid = old_uuid;
    if (id->uuid && strlen(id->uuid) >= GI_UUID_LEN)
        id->uuid = NULL; /* not a UUID, and it would not fit */
    if (id->pod == NULL) {
        id->pod = old_pod;
        if (id->ns == NULL)
            id->ns = old_ns;
        if (id->container == NULL)
            id->container = old_ctr;
    }
}

/* gi_pci_normalize for a label value, refusing first what that function
 * cannot take safely: it writes past its part arrays on a value with more
 * than three ':' / '.' separators ("0000:31:00.0.1"). */
static int normalize_bus(const char *v, char out[GI_BUS_LEN])
{
    int seps = 0;

    for (const char *p = v; *p; p++)
        if ((*p == ':' || *p == '.') && ++seps > 3)
            return -1;
    return gi_pci_normalize(v, out);
}

/* The GPU index from the gpu label, else from device ("nvidia3"); -1. */
static int gpu_index(const struct ids *id)
{
    int64_t v;

    if (id->gpu && gi_parse_int64(id->gpu, 0, 65535, &v) == GI_OK)
        return (int)v;
    if (id->device && strncmp(id->device, "nvidia", 6) == 0 &&
        gi_parse_int64(id->device + 6, 0, 65535, &v) == GI_OK)
        return (int)v;
    return -1;
}

/* Writes the physical GPU's key into key; false when the sample names no
 * GPU. bus is the normalized bus id or "". */
static int gpu_key(const struct ids *id, const char *host, const char *bus, int index,
                   char key[KEY_LEN])
{
    /* The host is cut as the record stores it, so a key never is. */
    int hl = GI_HOST_LEN - 1;

    if (id->uuid)
        snprintf(key, KEY_LEN, "u:%s", id->uuid);
    else if (bus[0])
        snprintf(key, KEY_LEN, "b:%.*s|%s", hl, host ? host : "", bus);
    else if (index >= 0)
        snprintf(key, KEY_LEN, "i:%.*s|%d", hl, host ? host : "", index);
    else
        return 0;
    return 1;
}

/* Fills the identity fields every record of this GPU shares. */
static void fill_identity(struct gi_gpu_obs *g, const struct ids *id, const char *host,
                          const char *bus, int index)
{
    if (g->index < 0)
        g->index = index;
    fill(g->name, id->model, sizeof g->name);
    fill(g->pci_bus_id, bus[0] ? bus : NULL, sizeof g->pci_bus_id);
    fill(g->hostname, host, sizeof g->hostname);
    fill(g->driver, id->driver, sizeof g->driver);
    fill(g->serial, id->serial, sizeof g->serial);
    fill(g->vbios, id->vbios, sizeof g->vbios);
}

/* True when stored (a field of capacity cap) holds v as copy_field would
 * have stored it. */
static int same_field(const char *stored, const char *v, size_t cap)
{
    size_t n = strlen(v);

    if (n < cap)
        return strcmp(stored, v) == 0;
    n = cap - 1;
    while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
        n--;
    return strlen(stored) == n && memcmp(stored, v, n) == 0;
}

static int same_pod(const struct dcgm_pod *p, const char *pod, const char *ns, const char *ctr)
{
    return same_field(p->pod, pod, sizeof p->pod) &&
           same_field(p->namespace_, ns, sizeof p->namespace_) &&
           same_field(p->container, ctr, sizeof p->container);
}

/* Adds the (record, pod) pair unless the record already has it. */
static int add_pod(struct dcgm *d, struct dcgm_rec *r, const struct gi_gpu_obs *g,
                   const struct ids *id, struct prom_error *err)
{
    const char *ns = id->ns ? id->ns : "", *ctr = id->container ? id->container : "";
    struct dcgm_pod *p;

    /* Most samples repeat the record's last pod; else walk its list. */
    if (r->pod_last && same_pod(&d->pods[r->pod_last - 1], id->pod, ns, ctr))
        return GI_OK;
    for (size_t k = r->pod_head; k; k = d->pod_next[k - 1]) {
        if (same_pod(&d->pods[k - 1], id->pod, ns, ctr)) {
            r->pod_last = k;
            return GI_OK;
        }
    }
    if (d->npods >= GI_OBS_MAX) {
        snprintf(err->msg, sizeof err->msg, "more than %d GPU pod pairs", GI_OBS_MAX);
        return GI_TOO_LARGE;
    }
    if (d->npods == d->pods_cap) {
        size_t nc = d->pods_cap ? d->pods_cap * 2 : 64;
        struct dcgm_pod *np = realloc(d->pods, nc * sizeof *np);
        if (np == NULL)
            goto oom;
        d->pods = np;
        size_t *nn = realloc(d->pod_next, nc * sizeof *nn);
        if (nn == NULL)
            goto oom;
        d->pod_next = nn;
        d->pods_cap = nc;
    }
    p = &d->pods[d->npods];
    memset(p, 0, sizeof *p);
    copy_field(p->gpu_uuid, g->parent_uuid[0] ? g->parent_uuid : g->uuid, sizeof p->gpu_uuid);
    p->mig_instance = g->mig_instance;
    copy_field(p->namespace_, ns, sizeof p->namespace_);
    copy_field(p->pod, id->pod, sizeof p->pod);
    copy_field(p->container, ctr, sizeof p->container);
    d->pod_next[d->npods] = r->pod_head;
    r->pod_head = ++d->npods;
    r->pod_last = r->pod_head;
    r->npods++;
    return GI_OK;
oom:
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return GI_INTERNAL;
}

/* The field a metric name feeds, or F_COUNT for none. */
static enum field field_of(const char *name)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(name, field_names[f]) == 0)
            return (enum field)f;
    return F_COUNT;
}

int dcgm_sample(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    struct dcgm *d = ctx;
    struct ids id;
    char key[KEY_LEN], bus[GI_BUS_LEN] = "";
    const char *host;
    long pi, ri;
    int index, st = GI_OK, mig = 0;
    int64_t gi_id = -1;
    struct dcgm_rec *r;
    struct gi_gpu_obs *g;

    if (strncmp(s->name, "DCGM_FI_", 8) != 0)
        return GI_OK;
    read_ids(s, &id);
    host = d->hostname ? d->hostname : id.host;
    if (id.bus && normalize_bus(id.bus, bus) != 0)
        bus[0] = '\0';
    index = gpu_index(&id);
    if (!gpu_key(&id, host, bus, index, key)) {
        d->skipped++;
        return GI_OK;
    }
    if (id.gi_id && gi_parse_int64(id.gi_id, 0, 1 << 20, &gi_id) == GI_OK)
        mig = 1;
    if ((pi = find_or_add(d, key, err, &st)) < 0)
        return st;
    ri = pi;
    if (mig) {
        size_t kl = strlen(key);
        snprintf(key + kl, sizeof key - kl, "/%lld", (long long)gi_id);
        if ((ri = find_or_add(d, key, err, &st)) < 0)
            return st;
    }
    /* Pointers only now: adding records may move the arrays. */
    g = &d->out->gpus[d->recs[pi].obs];
    fill(g->uuid, id.uuid, sizeof g->uuid);
    fill_identity(g, &id, host, bus, index);
    if (mig) {
        g->mig_mode = 1;
        g = &d->out->gpus[d->recs[ri].obs];
        fill(g->parent_uuid, id.uuid, sizeof g->parent_uuid);
        fill(g->mig_profile, id.gi_profile, sizeof g->mig_profile);
        g->mig_instance = (int)gi_id;
        fill_identity(g, &id, host, bus, index);
    }
    r = &d->recs[ri];
    if (s->has_ts) {
        struct gi_gpu_obs *parent = &d->out->gpus[d->recs[pi].obs];
        if (s->ts_ms > g->ts_ms)
            g->ts_ms = s->ts_ms;
        if (s->ts_ms > parent->ts_ms)
            parent->ts_ms = s->ts_ms;
    }
    enum field f = field_of(s->name + 8);
    if (f != F_COUNT && !dcgm_is_blank(s->value))
        r->v[f] = s->value;
    if (id.pod)
        return add_pod(d, r, g, &id, err);
    return GI_OK;
}

/* A counter value as an int64, -1 when absent or out of range. */
static int64_t count_of(double v)
{
    return (isfinite(v) && v >= 0 && v < 4.6e18) ? (int64_t)v : -1;
}

int dcgm_finish(struct dcgm *d)
{
    for (size_t k = 0; k < d->nrecs; k++) {
        struct dcgm_rec *r = &d->recs[k];
        struct gi_gpu_obs *g = &d->out->gpus[r->obs];
        const double *v = r->v;

        g->util_gpu_pct = v[F_GPU_UTIL];
        if (isnan(g->util_gpu_pct) && !isnan(v[F_GR_ACTIVE]))
            g->util_gpu_pct = fmin(fmax(v[F_GR_ACTIVE] * 100.0, 0.0), 100.0);
        g->util_mem_pct = v[F_MEM_COPY_UTIL];
        g->memory_used_mib = v[F_FB_USED];
        if (!isnan(v[F_FB_USED]) && !isnan(v[F_FB_FREE]))
            g->memory_total_mib =
                v[F_FB_USED] + v[F_FB_FREE] + (isnan(v[F_FB_RESERVED]) ? 0.0 : v[F_FB_RESERVED]);
        g->temp_c = v[F_GPU_TEMP];
        g->power_w = v[F_POWER];
        g->power_limit_w = isnan(v[F_POWER_ENFORCED]) ? v[F_POWER_MGMT_LIMIT] : v[F_POWER_ENFORCED];
        g->energy_j = v[F_ENERGY] / 1000.0;
        g->xid_last = count_of(v[F_XID]);
        g->ecc_corrected = count_of(isnan(v[F_SBE_AGG]) ? v[F_SBE_VOL] : v[F_SBE_AGG]);
        g->ecc_uncorrected = count_of(isnan(v[F_DBE_AGG]) ? v[F_DBE_VOL] : v[F_DBE_AGG]);
        if (g->parent_uuid[0] == '\0') { /* row remapping is the physical GPU's */
            g->remap_corrected = count_of(v[F_REMAP_CORR]);
            g->remap_uncorrectable = count_of(v[F_REMAP_UNC]);
            if (v[F_REMAP_FAIL] == 0 || v[F_REMAP_FAIL] == 1)
                g->remap_failure = (int)v[F_REMAP_FAIL];
        }
        /* A value out of range (NaN and blanks are absent already) is not
         * believed: that reading is absent, the record kept. */
        gi_gpu_obs_sanitize(g, d->out, g->uuid[0] ? g->uuid : r->key);
        if (r->npods == 1) {
            const struct dcgm_pod *p = &d->pods[r->pod_head - 1];
            copy_field(g->pod, p->pod, sizeof g->pod);
            copy_field(g->namespace_, p->namespace_, sizeof g->namespace_);
            copy_field(g->container, p->container, sizeof g->container);
        }
    }
    return GI_OK;
}
