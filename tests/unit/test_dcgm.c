/* dcgm-exporter consumer: fixtures (text and HTTP API) give exact GPU
 * records and pod pairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/dcgm.h"
#include "parse/promapi.h"
#include "parse/promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Doubles computed from decimal text compare within a rounding step. */
#define assert_near(a, b) assert_true(fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1))

static char *fixture(const char *name, size_t *len) { return unit_fixture("prom", name, len); }

/* Runs a fixture (text, or API JSON when the name ends in .json)
 * through the consumer into set. */
static void load(const char *name, struct dcgm *d, struct gi_obs_set *set, const char *host)
{
    struct prom_error err;
    size_t len;
    char *text = fixture(name, &len);
    int rc;

    dcgm_begin(d, set);
    d->hostname = host;
    if (strstr(name, ".json"))
        rc = promapi_parse(text, len, dcgm_sample, d, &err);
    else
        rc = prom_parse_text(text, len, dcgm_sample, d, &err);
    if (rc != GI_OK)
        fail_msg("%s: %s", name, err.msg);
    assert_int_equal(dcgm_finish(d), GI_OK);
    free(text);
}

/* The record with this uuid and MIG instance (-1: the physical GPU). */
static const struct gi_gpu_obs *find(const struct gi_obs_set *s, const char *uuid, int mig)
{
    for (size_t i = 0; i < s->ngpus; i++) {
        const struct gi_gpu_obs *g = &s->gpus[i];
        const char *u = mig >= 0 ? g->parent_uuid : g->uuid;
        if (strcmp(u, uuid) == 0 && g->mig_instance == mig)
            return g;
    }
    fail_msg("no record %s/%d", uuid, mig);
    return NULL;
}

static void test_a100_host(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_a100_8gpu.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 8);
    assert_int_equal(d.npods, 0);
    assert_int_equal(d.skipped, 0);
    g = find(&set, "GPU-5a1c0d03-1b2f-3d4e-8f73-9a8b7c6d5e43", -1);
    assert_int_equal(g->index, 3);
    assert_int_equal(g->vendor, GI_VENDOR_NVIDIA);
    assert_string_equal(g->name, "NVIDIA A100-SXM4-80GB");
    assert_string_equal(g->pci_bus_id, "0000:4e:00.0");
    assert_string_equal(g->hostname, "dgx-a100-01");
    assert_string_equal(g->driver, "535.129.03");
    assert_string_equal(g->parent_uuid, "");
    assert_int_equal(g->mig_mode, -1);
    assert_true(g->memory_total_mib == 81920.0);
    assert_true(g->memory_used_mib == 3003.0);
    assert_true(g->util_gpu_pct == 36.0);
    assert_true(g->util_mem_pct == 15.0);
    assert_true(g->temp_c == 33.0);
    assert_true(g->power_w == 173.144);
    assert_true(isnan(g->power_limit_w));
    assert_near(g->energy_j, 98768432.118);
    assert_int_equal(g->xid_last, 0);
    assert_int_equal(g->ecc_corrected, -1);
    assert_int_equal(g->ecc_uncorrected, -1);
    assert_string_equal(g->pod, "");
    assert_int_equal(g->ts_ms, 0);
    g = find(&set, "GPU-5a1c0d05-1b31-3d4e-8f75-9a8b7c6d5e45", -1);
    assert_int_equal(g->xid_last, 79);
    assert_string_equal(g->pci_bus_id, "0000:90:00.0");
    g = find(&set, "GPU-5a1c0d00-1b2c-3d4e-8f70-9a8b7c6d5e40", -1);
    assert_true(g->util_gpu_pct == 0.0); /* GPU_UTIL 0 is a value, not absence */
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_formats_sample(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_formats_sample.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 4); /* two GPUs, one MIG instance each */
    g = find(&set, "GPU-06357e72-c3ee-614b-775f-a89e18e8cc08", -1);
    assert_int_equal(g->mig_mode, 1);
    assert_string_equal(g->hostname, "metal-gpu-08");
    assert_string_equal(g->pci_bus_id, "");
    g = find(&set, "GPU-06357e72-c3ee-614b-775f-a89e18e8cc08", 0);
    assert_string_equal(g->uuid, "");
    assert_string_equal(g->mig_profile, "7g.79gb");
    assert_string_equal(g->name, "NVIDIA A100 80GB PCIe");
    assert_string_equal(g->driver, "535.154.05");
    assert_int_equal(g->index, 0);
    g = find(&set, "GPU-63bc0b91-2265-1b94-831c-15c41fe92675", 3);
    assert_string_equal(g->mig_profile, "1g.6gb");
    assert_string_equal(g->pci_bus_id, "0000:ca:00.0");
    assert_string_equal(g->hostname, "dcgm-exporter-wwwjh");
    assert_true(isnan(g->memory_used_mib));
    assert_true(isnan(g->memory_total_mib)); /* free alone gives no total */
    assert_string_equal(g->pod, "triton-server-f7cb5d77-95xcf");
    assert_string_equal(g->namespace_, "default");
    assert_string_equal(g->container, "triton-server");
    assert_int_equal(d.npods, 1);
    assert_string_equal(d.pods[0].gpu_uuid, "GPU-63bc0b91-2265-1b94-831c-15c41fe92675");
    assert_int_equal(d.pods[0].mig_instance, 3);
    assert_string_equal(d.pods[0].pod, "triton-server-f7cb5d77-95xcf");
    g = find(&set, "GPU-63bc0b91-2265-1b94-831c-15c41fe92675", -1);
    assert_string_equal(g->pod, ""); /* the pod is on the instance */
    assert_int_equal(g->index, 2);
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_old_labels(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_old_spaces.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 2);
    g = find(&set, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", -1);
    assert_int_equal(g->index, 0);
    assert_string_equal(g->pod, "bert-train-0");
    assert_string_equal(g->namespace_, "nlp");
    assert_string_equal(g->container, "trainer");
    assert_string_equal(g->hostname, "");
    assert_true(g->memory_total_mib == 16160.0);
    assert_true(g->memory_used_mib == 15067.0);
    assert_true(g->util_gpu_pct == 97.0);
    assert_true(g->temp_c == 61.0);
    assert_true(g->power_w == 247.382);
    g = find(&set, "GPU-9b1e5c7a-0f3d-4c2b-a6e8-1d2c3b4a5f60", -1);
    assert_string_equal(g->pod, "");
    assert_true(g->power_w == 41.057);
    assert_int_equal(d.npods, 1);
    assert_string_equal(d.pods[0].gpu_uuid, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52");
    assert_int_equal(d.pods[0].mig_instance, -1);
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_mig(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;
    const char *u0 = "GPU-3f7a9c21-5e4d-4b8a-9c0e-7d1f2a3b4c5d";

    load("dcgm_mig.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 5);
    g = find(&set, u0, -1);
    assert_int_equal(g->mig_mode, 1);
    assert_string_equal(g->name, "NVIDIA A100 80GB PCIe");
    assert_string_equal(g->pci_bus_id, "0000:31:00.0");
    assert_string_equal(g->hostname, "gpu-node-07");
    assert_true(isnan(g->util_gpu_pct)); /* only instances were reported */
    assert_true(isnan(g->temp_c));
    g = find(&set, u0, 5);
    assert_string_equal(g->uuid, "");
    assert_string_equal(g->mig_profile, "2g.20gb");
    assert_near(g->util_gpu_pct, 87.3512); /* PROF_GR_ENGINE_ACTIVE × 100 */
    assert_true(g->memory_used_mib == 17433.0);
    assert_true(g->memory_total_mib == 19744.0);
    assert_true(g->temp_c == 44.0);
    assert_true(g->power_w == 112.505);
    assert_string_equal(g->pod, "llm-infer-6d9f7c8b5-x2kqp");
    assert_string_equal(g->namespace_, "serving");
    assert_string_equal(g->container, "vllm");
    g = find(&set, u0, 1);
    assert_string_equal(g->mig_profile, "3g.40gb");
    assert_true(g->util_gpu_pct == 0.0);
    assert_true(g->memory_total_mib == 40192.0);
    g = find(&set, u0, 13);
    assert_true(g->util_gpu_pct == 12.5);
    assert_true(g->memory_total_mib == 9856.0);
    g = find(&set, "GPU-8e2b6d40-1a9c-4f3e-b5d7-0c6a9e8f7b21", -1);
    assert_int_equal(g->mig_mode, -1);
    assert_true(g->util_gpu_pct == 3.0); /* GPU_UTIL wins over the ratio */
    assert_true(g->memory_total_mib == 80542.0);
    assert_string_equal(g->pci_bus_id, "0000:b1:00.0");
    assert_int_equal(d.npods, 1);
    assert_string_equal(d.pods[0].gpu_uuid, u0);
    assert_int_equal(d.pods[0].mig_instance, 5);
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_pods_shared(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_pods_shared.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 3);
    g = find(&set, "GPU-c0ffee00-1111-2222-3333-444455556666", -1);
    assert_true(g->util_gpu_pct == 41.0);
    assert_true(g->memory_used_mib == 9120.0);
    assert_string_equal(g->pod, ""); /* two pods share it: see d.pods */
    g = find(&set, "GPU-c0ffee01-1111-2222-3333-444455556667", -1);
    assert_string_equal(g->pod, "jupyter-alice");
    assert_string_equal(g->namespace_, "research");
    assert_string_equal(g->container, "notebook");
    assert_int_equal(d.npods, 3);
    assert_string_equal(d.pods[0].gpu_uuid, "GPU-c0ffee00-1111-2222-3333-444455556666");
    assert_string_equal(d.pods[0].namespace_, "search");
    assert_string_equal(d.pods[0].pod, "embedder-7c9d8-abcde");
    assert_string_equal(d.pods[0].container, "embedder");
    assert_string_equal(d.pods[1].gpu_uuid, "GPU-c0ffee00-1111-2222-3333-444455556666");
    assert_string_equal(d.pods[1].pod, "ranker-5f6b7-zyxwv");
    assert_string_equal(d.pods[1].container, "ranker");
    assert_string_equal(d.pods[2].gpu_uuid, "GPU-c0ffee01-1111-2222-3333-444455556667");
    assert_string_equal(d.pods[2].pod, "jupyter-alice");
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_blanks(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_blanks.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 2);
    g = find(&set, "GPU-b1a2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", -1);
    assert_string_equal(g->name, "");   /* <<<NULL>>> */
    assert_string_equal(g->driver, ""); /* <<<NOT_SUPPORTED>>> */
    assert_true(isnan(g->temp_c));
    assert_true(isnan(g->power_w));
    assert_true(isnan(g->util_gpu_pct));
    assert_true(isnan(g->util_mem_pct));
    assert_true(g->memory_used_mib == 1024.0);
    assert_true(isnan(g->memory_total_mib));
    assert_true(isnan(g->energy_j));
    assert_int_equal(g->xid_last, -1);
    /* No UUID and no bus id: known by host and index. */
    g = &set.gpus[1];
    assert_string_equal(g->uuid, "");
    assert_string_equal(g->pci_bus_id, "");
    assert_int_equal(g->index, 1);
    assert_string_equal(g->hostname, "h100-node-3");
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_true(g->temp_c == 35.0);
    assert_true(g->power_w == 71.296);
    assert_true(isnan(g->util_gpu_pct)); /* NaN */
    assert_true(isnan(g->util_mem_pct)); /* +Inf */
    assert_true(g->memory_total_mib == 81079.0);
    assert_true(g->energy_j == 5250.0);
    assert_int_equal(g->xid_last, 48);
    assert_int_equal(g->ecc_corrected, 17); /* aggregate over volatile */
    assert_int_equal(g->ecc_uncorrected, 0);
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_timestamps_crlf_override(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("dcgm_timestamps.prom", &d, &set, "node-a");
    assert_int_equal(set.ngpus, 1);
    g = &set.gpus[0];
    assert_int_equal(g->ts_ms, INT64_C(1717000005000));
    assert_string_equal(g->pci_bus_id, "0000:3b:00.0");
    assert_string_equal(g->hostname, "node-a");
    assert_true(g->temp_c == 52.0);
    assert_true(g->power_w == 27.015);
    dcgm_free(&d);

    /* A second source appends to the same set. */
    load("dcgm_crlf.prom", &d, &set, NULL);
    assert_int_equal(set.ngpus, 2);
    g = &set.gpus[1];
    assert_string_equal(g->uuid, "GPU-0a0b0c0d-1e1f-2a2b-3c3d-4e4f5a5b6c6d");
    assert_string_equal(g->name, "Tesla V100-SXM2-32GB");
    assert_true(g->temp_c == 48.0);
    assert_true(g->util_gpu_pct == 12.0);
    assert_int_equal(set.gpus[0].ts_ms, INT64_C(1717000005000));
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_api(void **state)
{
    struct gi_obs_set set = {0};
    struct dcgm d;
    const struct gi_gpu_obs *g;

    load("api_vector.json", &d, &set, NULL);
    assert_int_equal(set.ngpus, 2);
    g = find(&set, "GPU-5a1c0d00-1b2c-3d4e-8f70-9a8b7c6d5e40", -1);
    assert_true(g->util_gpu_pct == 87.0);
    assert_true(g->memory_used_mib == 61440.0);
    assert_true(g->memory_total_mib == 81353.0);
    assert_string_equal(g->pod, "resnet-train-0");
    assert_string_equal(g->namespace_, "ml-team");
    assert_string_equal(g->pci_bus_id, "0000:07:00.0");
    assert_string_equal(g->driver, "535.129.03");
    assert_int_equal(g->ts_ms, INT64_C(1717171717123));
    g = find(&set, "GPU-5a1c0d01-1b2d-3d4e-8f71-9a8b7c6d5e41", -1);
    assert_true(isnan(g->util_gpu_pct));
    assert_int_equal(d.npods, 1);
    dcgm_free(&d);
    gi_obs_free(&set);

    /* A range query: each series' last point wins. */
    load("api_matrix.json", &d, &set, NULL);
    assert_int_equal(set.ngpus, 2);
    g = find(&set, "GPU-3f7a9c21-5e4d-4b8a-9c0e-7d1f2a3b4c5d", -1);
    assert_true(g->temp_c == 44.0);
    assert_int_equal(g->ts_ms, INT64_C(1717000030000));
    g = find(&set, "GPU-8e2b6d40-1a9c-4f3e-b5d7-0c6a9e8f7b21", -1);
    assert_true(g->temp_c == 30.0);
    assert_int_equal(g->ts_ms, INT64_C(1717000030500));
    assert_string_equal(g->hostname, "gpu-node-07");
    dcgm_free(&d);
    gi_obs_free(&set);
}

static void test_blank_values_and_skips(void **state)
{
    static const double blank[] = {2147483632.0,
                                   2147483633.0,
                                   2147483634.0,
                                   2147483635.0,
                                   140737488355328.0,
                                   140737488355329.0,
                                   140737488355330.0,
                                   140737488355331.0,
                                   9223372036854775792.0,
                                   9223372036854775794.0,
                                   9223372036854775807.0,
                                   NAN,
                                   INFINITY,
                                   -INFINITY};
    static const double real[] = {0.0,  100.0,  2147483631.0, 2147483636.0, 140737488355327.0,
                                  1e15, 9.2e18, -1.0};
    struct gi_obs_set set = {0};
    struct prom_error err;
    struct dcgm d;
    static const char text[] =
        "go_goroutines 12\n"
        "DCGM_FI_DEV_GPU_TEMP 40\n"
        "DCGM_FI_DEV_GPU_TEMP{UUID=\"N/A\",gpu=\"x\"} 41\n"
        "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-1\",GPU_I_ID=\"bad\",Hostname=\"[N/A]\","
        "pod=\"<<<NULL>>>\"} 42\n"
        "DCGM_FI_DEV_GPU_TEMP{device=\"nvidia7\",hostname=\"h\"} 43\n"
        "DCGM_FI_DEV_GPU_TEMP{device=\"nvidia7\",Hostname=\"h\"} 44\n"
        "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-2\",pci_bus_id=\"0000:31:00.0.1\"} 45\n"
        "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-3\",GPU_I_ID=\"2\"} 46 1700000000000\n"
        "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "012345678901234567890123456789\"} 47\n";

    for (size_t i = 0; i < sizeof blank / sizeof *blank; i++)
        assert_true(dcgm_is_blank(blank[i]));
    for (size_t i = 0; i < sizeof real / sizeof *real; i++)
        assert_false(dcgm_is_blank(real[i]));

    dcgm_begin(&d, &set);
    assert_int_equal(prom_parse_text(text, sizeof text - 1, dcgm_sample, &d, &err), GI_OK);
    assert_int_equal(dcgm_finish(&d), GI_OK);
    assert_int_equal(d.skipped, 3); /* the last UUID is too long to be one */
    assert_int_equal(d.npods, 0);
    assert_int_equal(set.ngpus, 5);
    assert_string_equal(set.gpus[0].uuid, "GPU-1");
    assert_int_equal(set.gpus[0].mig_mode, -1); /* GPU_I_ID "bad" is not an instance */
    assert_string_equal(set.gpus[0].hostname, "");
    assert_true(set.gpus[0].temp_c == 42.0);
    assert_int_equal(set.gpus[1].index, 7);
    assert_string_equal(set.gpus[1].hostname, "h");
    assert_true(set.gpus[1].temp_c == 44.0);
    assert_string_equal(set.gpus[2].pci_bus_id, ""); /* five parts: not a bus id */
    assert_true(set.gpus[2].temp_c == 45.0);
    assert_string_equal(set.gpus[3].uuid, "GPU-3");
    assert_int_equal(set.gpus[3].ts_ms, INT64_C(1700000000000));
    assert_true(isnan(set.gpus[3].temp_c));
    assert_string_equal(set.gpus[4].parent_uuid, "GPU-3");
    assert_int_equal(set.gpus[4].mig_instance, 2);
    assert_int_equal(set.gpus[4].ts_ms, INT64_C(1700000000000));
    assert_true(set.gpus[4].temp_c == 46.0);
    dcgm_free(&d);
    dcgm_free(&d); /* twice is harmless */
    gi_obs_free(&set);
}

static void test_many_gpus(void **state)
{
    /* Enough GPUs to grow the hash several times; every one found again. */
    struct gi_obs_set set = {0};
    struct prom_error err;
    struct dcgm d;
    size_t cap = 3000 * 2 * 120, o = 0;
    char *text = malloc(cap);

    assert_non_null(text);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3000; i++)
            o += (size_t)snprintf(text + o, cap - o,
                                  "DCGM_FI_DEV_%s{gpu=\"%d\",UUID=\"GPU-%08d\",pod=\"p%d\"} %d\n",
                                  m ? "GPU_TEMP" : "GPU_UTIL", i % 8, i, i % 2, i % 100);
    dcgm_begin(&d, &set);
    assert_int_equal(prom_parse_text(text, o, dcgm_sample, &d, &err), GI_OK);
    assert_int_equal(dcgm_finish(&d), GI_OK);
    assert_int_equal(set.ngpus, 3000);
    assert_int_equal(d.npods, 3000);
    assert_string_equal(set.gpus[2999].uuid, "GPU-00002999");
    assert_true(set.gpus[2999].temp_c == 99.0);
    assert_true(set.gpus[2999].util_gpu_pct == 99.0);
    assert_string_equal(set.gpus[2999].pod, "p1");
    dcgm_free(&d);
    gi_obs_free(&set);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a100_host),
        cmocka_unit_test(test_formats_sample),
        cmocka_unit_test(test_old_labels),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_pods_shared),
        cmocka_unit_test(test_blanks),
        cmocka_unit_test(test_timestamps_crlf_override),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_blank_values_and_skips),
        cmocka_unit_test(test_many_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
