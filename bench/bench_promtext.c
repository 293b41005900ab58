/* Parse throughput of the Prometheus text parser on dcgm-exporter output.
 *
 * Build and run from the repository root:
 *   cc -O2 -Isrc bench/bench_promtext.c src/parse/promtext.c src/parse/dcgm.c \
 *      src/core/observation.c src/core/util.c -lm -o build/bench_promtext && build/bench_promtext
 *
 * Generates about 50 MB of realistic dcgm-exporter text: 125 hosts of 8
 * GPUs (1,000 GPUs), 26 metric families, pod labels on most GPUs, over as
 * many scrape rounds as it takes. Reports, best of several runs over the
 * same buffer: a plain memchr line split (the floor any line parser
 * pays), prom_parse_text with a callback that only counts, and
 * prom_parse_text feeding the dcgm consumer. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "core/observation.h"
#include "core/status.h"
#include "parse/dcgm.h"
#include "parse/promtext.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET_BYTES (50u * 1000 * 1000)
#define RUNS 5

static const struct {
    const char *name, *type, *help;
    int kind; /* 0 integer 0..100, 1 watts with 6 decimals, 2 MiB, 3 ratio, 4 counter */
} families[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 2},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 2},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", 0},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 0},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 1},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", 4},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 4},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 0},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 0},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", 0},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", 0},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 2},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 2},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", 2},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes.", 4},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", 0},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors", 4},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors", 4},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", 3},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.", 3},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.", 3},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus.", 4},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus.", 4},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).", 1},
};

static uint64_t rng = 88172645463325252u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Appends formatted text to the buffer; exits when it does not fit. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t cap, size_t *len,
                                                      const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len) {
        fprintf(stderr, "bench: generated text does not fit\n");
        exit(1);
    }
    *len += (size_t)n;
}

/* Writes scrape rounds of all 125 hosts until TARGET_BYTES is reached. */
static char *generate(size_t *len_out, int *rounds_out)
{
    static const char *const bus[8] = {"07", "0F", "47", "4E", "87", "90", "B7", "BD"};
    size_t cap = TARGET_BYTES + 16 * 1000 * 1000, len = 0;
    char *buf = malloc(cap);
    int rounds = 0;

    if (buf == NULL)
        exit(1);
    while (len < TARGET_BYTES) {
        rounds++;
        for (int h = 0; h < 125; h++) {
            for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
                put(buf, cap, &len, "# HELP %s %s\n# TYPE %s %s\n", families[f].name,
                    families[f].help, families[f].name, families[f].type);
                for (int g = 0; g < 8; g++) {
                    int id = h * 8 + g;
                    char value[64];
                    uint64_t r = next();
                    switch (families[f].kind) {
                    case 0:
                        snprintf(value, sizeof value, "%u", (unsigned)(r % 101));
                        break;
                    case 1:
                        snprintf(value, sizeof value, "%.6f", 50.0 + (double)(r % 350000) / 1000);
                        break;
                    case 2:
                        snprintf(value, sizeof value, "%u", (unsigned)(r % 81920));
                        break;
                    case 3:
                        snprintf(value, sizeof value, "%.6f", (double)(r % 1000000) / 1e6);
                        break;
                    default:
                        snprintf(value, sizeof value, "%llu",
                                 (unsigned long long)(r % 100000000000000u));
                        break;
                    }
                    put(buf, cap, &len,
                        "%s{gpu=\"%d\",UUID=\"GPU-%08x-%04x-%04x-%04x-%012llx\","
                        "pci_bus_id=\"00000000:%s:00.0\",device=\"nvidia%d\","
                        "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-%03d\","
                        "DCGM_FI_DRIVER_VERSION=\"550.54.15\",container=\"%s\","
                        "namespace=\"%s\",pod=\"%s%s\"} %s\n",
                        families[f].name, g, 0x5a1c0000u + (unsigned)id, 0x1b2cu + (unsigned)g,
                        0x3d4eu, 0x8f70u + (unsigned)h, 0x9a8b7c6d0000ull + (unsigned)id,
                        bus[g], g, h, id % 4 ? "trainer" : "", id % 4 ? "ml-research" : "",
                        id % 4 ? "llm-finetune-7f9c8d6b5-" : "", id % 4 ? "x2kqp" : "", value);
                }
            }
        }
    }
    *len_out = len;
    *rounds_out = rounds;
    return buf;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct count {
    size_t n;
    double sum;
};

static int count_sample(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    struct count *c = ctx;

    c->n++;
    c->sum += s->value + (double)s->nlabels;
    return GI_OK;
}

int main(void)
{
    size_t len, lines = 0, samples = 0;
    int rounds;
    char *buf = generate(&len, &rounds);
    double best_split = 1e9, best_parse = 1e9, best_dcgm = 1e9, mb = (double)len / 1e6;
    size_t ngpus = 0, npods = 0;

    for (int run = 0; run < RUNS; run++) {
        /* Reference: split into lines and look at each line's first byte. */
        double t0 = now();
        size_t nl = 0, acc = 0;
        for (const char *p = buf, *end = buf + len; p < end;) {
            const char *e = memchr(p, '\n', (size_t)(end - p));
            acc += (unsigned char)*p;
            nl++;
            p = e ? e + 1 : end;
        }
        double t1 = now();
        if (t1 - t0 < best_split)
            best_split = t1 - t0;
        lines = nl + (acc == 0); /* keep acc alive */

        struct count c = {0};
        struct prom_error err;
        t0 = now();
        if (prom_parse_text(buf, len, count_sample, &c, &err) != GI_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        t1 = now();
        if (t1 - t0 < best_parse)
            best_parse = t1 - t0;
        samples = c.n;

        struct gi_obs_set set = {0};
        struct dcgm d;
        dcgm_begin(&d, &set);
        t0 = now();
        if (prom_parse_text(buf, len, dcgm_sample, &d, &err) != GI_OK ||
            dcgm_finish(&d) != GI_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        t1 = now();
        if (t1 - t0 < best_dcgm)
            best_dcgm = t1 - t0;
        ngpus = set.ngpus;
        npods = d.npods;
        dcgm_free(&d);
        gi_obs_free(&set);
    }
    printf("input: %.1f MB, %zu lines, %zu samples, %d scrape rounds of 1000 GPUs\n", mb, lines,
           samples, rounds);
    printf("memchr line split (reference): %8.1f MB/s\n", mb / best_split);
    printf("prom_parse_text:               %8.1f MB/s  (%.0f samples/s)\n", mb / best_parse,
           (double)samples / best_parse);
    printf("prom_parse_text + dcgm:        %8.1f MB/s  (%zu GPU records, %zu pods)\n",
           mb / best_dcgm, ngpus, npods);
    free(buf);
    return 0;
}
