/* Observation sets and the normalizations every parser shares. */
#include "core/observation.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gi_gpu_obs_init(struct gi_gpu_obs *g)
{
    memset(g, 0, sizeof *g);
    g->index = -1;
    g->mig_mode = -1;
    g->mig_instance = -1;
    g->memory_total_mib = NAN;
    g->memory_used_mib = NAN;
    g->util_gpu_pct = NAN;
    g->util_mem_pct = NAN;
    g->temp_c = NAN;
    g->power_w = NAN;
    g->power_limit_w = NAN;
    g->energy_j = NAN;
    g->ecc_corrected = -1;
    g->ecc_uncorrected = -1;
    g->xid_last = -1;
    g->remap_corrected = -1;
    g->remap_uncorrectable = -1;
    g->remap_pending = -1;
    g->remap_failure = -1;
}

/* Grows *arr (of elem-sized items) to hold one more; false at the cap. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n >= GI_OBS_MAX)
        return 0;
    if (n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, nc * elem);
        if (p == NULL)
            return 0;
        *arr = p;
        *cap = nc;
    }
    return 1;
}

struct gi_gpu_obs *gi_obs_add_gpu(struct gi_obs_set *s)
{
    struct gi_gpu_obs *g;

    if (!grow((void **)&s->gpus, &s->gpus_cap, s->ngpus, sizeof *s->gpus))
        return NULL;
    g = &s->gpus[s->ngpus++];
    gi_gpu_obs_init(g);
    return g;
}

struct gi_proc_obs *gi_obs_add_proc(struct gi_obs_set *s)
{
    struct gi_proc_obs *p;

    if (!grow((void **)&s->procs, &s->procs_cap, s->nprocs, sizeof *s->procs))
        return NULL;
    p = &s->procs[s->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->uid = -1;
    p->used_mib = NAN;
    return p;
}

struct gi_pod_obs *gi_obs_add_pod(struct gi_obs_set *s)
{
    struct gi_pod_obs *p;

    if (!grow((void **)&s->pods, &s->pods_cap, s->npods, sizeof *s->pods))
        return NULL;
    p = &s->pods[s->npods++];
    memset(p, 0, sizeof *p);
    return p;
}

void gi_obs_free(struct gi_obs_set *s)
{
    free(s->gpus);
    free(s->procs);
    free(s->pods);
    memset(s, 0, sizeof *s);
}

int gi_pci_normalize(const char *in, char out[GI_BUS_LEN])
{
    /* domain:bus:device.function with a domain of 4 or 8 hex digits, or
     * without a domain. */
    const char *p = in;
    const char *parts[4];
    size_t lens[4];
    char seps[3];
    int n = 0;
    unsigned long dom = 0, bus, dev, fn;
    char *end;

    while (*p == ' ')
        p++;
    parts[n] = p;
    for (; *p; p++) {
        if (*p == ':' || *p == '.') {
            if (n == 3)
                return -1; /* more than four parts */
            lens[n] = (size_t)(p - parts[n]);
            seps[n] = *p;
            parts[++n] = p + 1;
        } else if (!isxdigit((unsigned char)*p)) {
            break;
        }
    }
    lens[n] = (size_t)(p - parts[n]);
    while (*p == ' ')
        p++;
    if (*p)
        return -1;
    n++;
    if (n != 3 && n != 4)
        return -1;
    /* Colons between domain, bus and device; a dot before the function. */
    for (int i = 0; i < n - 1; i++)
        if (seps[i] != (i == n - 2 ? '.' : ':'))
            return -1;
    for (int i = 0; i < n; i++)
        if (lens[i] == 0 || lens[i] > 8)
            return -1;
    int b = n == 4 ? 1 : 0;
    if (n == 4)
        dom = strtoul(parts[0], &end, 16);
    bus = strtoul(parts[b], &end, 16);
    dev = strtoul(parts[b + 1], &end, 16);
    fn = strtoul(parts[b + 2], &end, 16);
    if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
        return -1;
    static const char hx[] = "0123456789abcdef";
    char *o = out;
    for (int sh = 12; sh >= 0; sh -= 4)
        *o++ = hx[(dom >> sh) & 15];
    *o++ = ':';
    *o++ = hx[bus >> 4];
    *o++ = hx[bus & 15];
    *o++ = ':';
    *o++ = hx[dev >> 4];
    *o++ = hx[dev & 15];
    *o++ = '.';
    *o++ = hx[fn];
    *o = '\0';
    return 0;
}

/* True for the numeric blanks DCGM reports for a value it could not read:
 * the 64-bit integer blank 0x7ffffffffffffff0 and the double blank 2^47,
 * each followed by up to 15 reason codes (not found, not supported, …). */
static int dcgm_blank(const char *s, size_t n)
{
    char buf[64];
    char *end;
    unsigned long long u;
    double d;

    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (isdigit((unsigned char)buf[0])) {
        errno = 0;
        u = strtoull(buf, &end, 10);
        if (*end == '\0' && errno == 0 && u >= 0x7ffffffffffffff0ULL && u <= 0x7fffffffffffffffULL)
            return 1;
    }
    d = strtod(buf, &end);
    return end != buf && *end == '\0' && d >= 140737488355328.0 && d < 140737488355344.0;
}

int gi_is_placeholder(const char *s)
{
    static const char *const words[] = {"N/A",
                                        "NA",
                                        "None",
                                        "ERR!",
                                        "Not Supported",
                                        "Unknown Error",
                                        "Insufficient Permissions",
                                        "GPU is lost",
                                        "<<<NULL>>>",
                                        "<<<NOT_SUPPORTED>>>",
                                        NULL};
    size_t n;

    while (*s == ' ')
        s++;
    n = strlen(s);
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (n == 0)
        return 1;
    if (s[0] == '[' && s[n - 1] == ']')
        return 1; /* [N/A], [Not Supported], [Insufficient Permissions], [GPU is lost], … */
    for (const char *const *w = words; *w; w++)
        if (strlen(*w) == n && strncasecmp(s, *w, n) == 0)
            return 1;
    return dcgm_blank(s, n);
}

void gi_sample_init(struct gi_sample *s)
{
    memset(s, 0, sizeof *s);
    s->util_avg = s->util_max = s->mem_used_mib = s->power_avg_w = NAN;
    s->energy_j = s->temp_c = NAN;
    s->ecc_corrected = s->ecc_uncorrected = s->xid = -1;
}

void gi_batch_free(struct gi_batch *b)
{
    gi_obs_free(&b->set);
    free(b->samples);
    b->samples = NULL;
    b->nsamples = 0;
}

void gi_obs_warn(struct gi_obs_set *s, const char *fmt, ...)
{
    va_list ap;

    if (s->nwarnings++ > 0)
        return;
    va_start(ap, fmt);
    vsnprintf(s->warning, sizeof s->warning, fmt, ap);
    va_end(ap);
}

void gi_obs_warn_rewind(struct gi_obs_set *s, size_t n)
{
    if (n >= s->nwarnings)
        return;
    s->nwarnings = n;
    if (n == 0)
        s->warning[0] = '\0'; /* the text is the first warning's */
}

/* Sets *v absent (NAN) when it lies outside [lo, hi]; 1 when it did. */
static int drop_out_of_range(double *v, double lo, double hi, struct gi_obs_set *set,
                             const char *who, const char *what)
{
    if (isnan(*v) || (*v >= lo && *v <= hi))
        return 0;
    if (set)
        gi_obs_warn(set, "%s: %s %g is out of range (%g to %g); left absent", who, what, *v, lo,
                    hi);
    *v = NAN;
    return 1;
}

int gi_gpu_obs_sanitize(struct gi_gpu_obs *g, struct gi_obs_set *set, const char *who)
{
    int n = 0;

    n += drop_out_of_range(&g->memory_total_mib, 0, GI_MEM_MIB_MAX, set, who, "memory total");
    n += drop_out_of_range(&g->memory_used_mib, 0, GI_MEM_MIB_MAX, set, who, "memory used");
    /* A little slack: drivers round used and total differently. */
    if (!isnan(g->memory_total_mib) && g->memory_total_mib > 0)
        n += drop_out_of_range(&g->memory_used_mib, 0, g->memory_total_mib * 1.01 + 1, set, who,
                               "memory used");
    n += drop_out_of_range(&g->util_gpu_pct, 0, 100, set, who, "GPU utilization");
    n += drop_out_of_range(&g->util_mem_pct, 0, 100, set, who, "memory utilization");
    n += drop_out_of_range(&g->temp_c, GI_TEMP_C_MIN, GI_TEMP_C_MAX, set, who, "temperature");
    n += drop_out_of_range(&g->power_w, 0, GI_POWER_W_MAX, set, who, "power draw");
    n += drop_out_of_range(&g->power_limit_w, 0, GI_POWER_W_MAX, set, who, "power limit");
    n += drop_out_of_range(&g->energy_j, 0, GI_ENERGY_J_MAX, set, who, "energy");
    if (g->ecc_corrected < -1 || g->ecc_uncorrected < -1 || g->xid_last < -1) {
        if (set)
            gi_obs_warn(set, "%s: a negative error counter; left absent", who);
        n++;
    }
    if (g->ecc_corrected < -1)
        g->ecc_corrected = -1;
    if (g->ecc_uncorrected < -1)
        g->ecc_uncorrected = -1;
    if (g->xid_last < -1)
        g->xid_last = -1;
    return n;
}
