/* Kubernetes parsers: quantities, NodeList, PodList, Status, malformed
 * input. Fixtures live in tests/fixtures/k8s/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "core/util.h"
#include "parse/k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *name, size_t *len) { return unit_fixture("k8s", name, len); }

/* ---- Quantities ------------------------------------------------------ */

static void count_ok(const char *s, int64_t want)
{
    int64_t v = -7;
    int st = k8s_quantity_count(s, &v);
    if (st != GI_OK || v != want)
        fail_msg("count \"%s\": status %d value %lld, want %lld", s, st, (long long)v,
                 (long long)want);
}

static void count_bad(const char *s, int want_st)
{
    int64_t v = -7;
    int st = k8s_quantity_count(s, &v);
    if (st != want_st)
        fail_msg("count \"%s\": status %d, want %d", s, st, want_st);
    assert_int_equal(v, -7);
}

static void bytes_ok(const char *s, int64_t want)
{
    int64_t v = -7;
    int st = k8s_quantity_bytes(s, &v);
    if (st != GI_OK || v != want)
        fail_msg("bytes \"%s\": status %d value %lld, want %lld", s, st, (long long)v,
                 (long long)want);
}

static void test_quantity_count(void **state)
{
    (void)state;
    count_ok("8", 8);
    count_ok("80", 80);
    count_ok("0", 0);
    count_ok("-0", 0);
    count_ok("+3", 3);
    count_ok("1k", 1000);
    count_ok("1e3", 1000);
    count_ok("1E3", 1000);
    count_ok("1e+3", 1000);
    count_ok("1000m", 1);
    count_ok("2000000u", 2);
    count_ok("3000000000n", 3);
    count_ok("1.5k", 1500);
    count_ok("0.5e1", 5);
    count_ok("5.", 5);
    count_ok("2Ki", 2048);
    count_ok("1M", 1000000);
    count_ok("0007", 7);
    count_ok("1E", INT64_C(1000000000000000000));
    count_ok("9223372036854775807", INT64_MAX);
    count_ok("0.000e5", 0);
    /* Fractions are an error for counts, never rounded down. */
    count_bad("500m", GI_INVALID);
    count_bad("0.5", GI_INVALID);
    count_bad(".5", GI_INVALID);
    count_bad("1.5", GI_INVALID);
    count_bad("1e-1", GI_INVALID);
    count_bad("1n", GI_INVALID);
    count_bad("-1", GI_INVALID);
    /* Syntax. */
    count_bad("", GI_INVALID);
    count_bad(" 8", GI_INVALID);
    count_bad("8 ", GI_INVALID);
    count_bad("8x", GI_INVALID);
    count_bad("1K", GI_INVALID);
    count_bad("1ki", GI_INVALID);
    count_bad("1e", GI_INVALID);
    count_bad("1e+", GI_INVALID);
    count_bad("1e1.5", GI_INVALID);
    count_bad(".", GI_INVALID);
    count_bad("+", GI_INVALID);
    count_bad("1..2", GI_INVALID);
    count_bad("1.2.3", GI_INVALID);
    count_bad("--1", GI_INVALID);
    count_bad("0x10", GI_INVALID);
    count_bad("1,5", GI_INVALID);
    count_bad("Ki", GI_INVALID);
    count_bad("8Gi ", GI_INVALID);
    count_bad("12345678901234567890123456789012345678901234567890123456789012345",
              GI_INVALID); /* longer than K8S_MAX_QUANTITY */
    /* Range. */
    count_bad("9223372036854775808", GI_TOO_LARGE);
    count_bad("1e19", GI_TOO_LARGE);
    count_bad("20Ei", GI_TOO_LARGE);
    count_bad("1e99999999", GI_TOO_LARGE);
}

static void test_quantity_tiny_is_fraction(void **state)
{
    struct k8s_quantity q;
    (void)state;
    assert_int_equal(k8s_quantity_parse("1e-99999999", 0, &q), GI_OK);
    assert_int_equal(q.whole, 0);
    assert_true(q.frac);
    assert_false(q.negative);
    assert_int_equal(k8s_quantity_parse("-2.25Ki", 0, &q), GI_OK);
    assert_true(q.negative);
    assert_int_equal(q.whole, 2304);
    assert_false(q.frac);
    assert_int_equal(k8s_quantity_parse("18446744073709551615", 0, &q), GI_OK);
    assert_true(q.whole == UINT64_MAX);
    assert_int_equal(k8s_quantity_parse("18446744073709551616", 0, &q), GI_TOO_LARGE);
    assert_int_equal(k8s_quantity_parse("15Ei", 0, &q), GI_OK);
    assert_true(q.whole == UINT64_C(15) << 60);
    assert_int_equal(k8s_quantity_parse("16Ei", 0, &q), GI_TOO_LARGE);
}

static void test_quantity_bytes_milli(void **state)
{
    int64_t v = 0;
    (void)state;
    bytes_ok("2Gi", INT64_C(2147483648));
    bytes_ok("2113276956Ki", INT64_C(2163995602944));
    bytes_ok("1.5Gi", INT64_C(1610612736));
    bytes_ok("1.5", 2); /* rounded up, as Kubernetes does */
    bytes_ok("100m", 1);
    bytes_ok("0.1Ki", 103); /* 102.4 */
    bytes_ok("128974848", INT64_C(128974848));
    bytes_ok("129e6", INT64_C(129000000));
    bytes_ok("123Mi", INT64_C(128974848));
    bytes_ok("7Ei", INT64_C(8070450532247928832));
    assert_int_equal(k8s_quantity_bytes("8Ei", &v), GI_TOO_LARGE);
    assert_int_equal(k8s_quantity_bytes("-1Gi", &v), GI_INVALID);
    assert_int_equal(k8s_quantity_milli("2", &v), GI_OK);
    assert_int_equal(v, 2000);
    assert_int_equal(k8s_quantity_milli("223500m", &v), GI_OK);
    assert_int_equal(v, 223500);
    assert_int_equal(k8s_quantity_milli("0.0005", &v), GI_OK);
    assert_int_equal(v, 1);
    assert_int_equal(k8s_quantity_milli("250m", &v), GI_OK);
    assert_int_equal(v, 250);
}

/* ---- Nodes ----------------------------------------------------------- */

static const struct k8s_node_res *res(const struct k8s_node *n, const char *name)
{
    for (size_t i = 0; i < n->nres; i++)
        if (strcmp(n->res[i].name, name) == 0)
            return &n->res[i];
    fail_msg("node %s: no resource %s", n->name, name);
    return NULL;
}

static void test_nodes(void **state)
{
    struct k8s_node_list l = {0};
    char err[K8S_ERR_LEN];
    size_t len;
    char *data = slurp("nodes.json", &len);
    const struct k8s_node *n;
    (void)state;

    assert_int_equal(k8s_parse_node_list(data, len, &l, err, sizeof err), GI_OK);
    assert_string_equal(err, "");
    assert_string_equal(l.meta.resource_version, "48213077");
    assert_string_equal(l.meta.continue_token, "");
    assert_int_equal(l.meta.remaining, -1);
    assert_false(l.status.present);
    assert_int_equal(l.nitems, 5);

    /* DGX H100, on premises: GFD labels, mig.strategy=single but no MIG. */
    n = &l.items[0];
    assert_string_equal(n->name, "dgx-h100-01");
    assert_string_equal(n->uid, "6f1c2b9e-3d4a-4e8b-9a51-0c7d2e4f8a13");
    assert_string_equal(n->hostname, "dgx-h100-01");
    assert_string_equal(n->provider_id, "");
    assert_string_equal(n->cloud, "");
    assert_string_equal(n->region, "");
    assert_string_equal(n->zone, "");
    assert_string_equal(n->instance_type, "");
    assert_int_equal(n->ready, 1);
    assert_false(n->unschedulable);
    assert_int_equal(n->vendor, GI_VENDOR_NVIDIA);
    assert_string_equal(n->product, "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(n->product_base, "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(n->mig_profile, "");
    assert_false(n->shared);
    assert_int_equal(n->gpu_count, 8);
    assert_int_equal(n->gpu_memory_mb, 81559);
    assert_int_equal(n->replicas, 1);
    assert_string_equal(n->family, "hopper");
    assert_string_equal(n->machine, "DGX-H100");
    assert_string_equal(n->sharing_strategy, "none");
    assert_string_equal(n->mig_strategy, "single");
    assert_int_equal(n->compute_major, 9);
    assert_int_equal(n->compute_minor, 0);
    assert_int_equal(n->driver_major, 535);
    assert_int_equal(n->driver_minor, 104);
    assert_int_equal(n->driver_rev, 5);
    assert_string_equal(n->driver, "535.104.05");
    assert_int_equal(n->nmigs, 0);
    assert_int_equal(n->nres, 1);
    assert_int_equal(res(n, "nvidia.com/gpu")->capacity, 8);
    assert_int_equal(res(n, "nvidia.com/gpu")->allocatable, 7);
    assert_int_equal(n->cpu_milli, 224000);
    assert_int_equal(n->memory_bytes, INT64_C(2113276956) * 1024);
    assert_int_equal(n->physical_gpus, 8);
    assert_int_equal(n->mig_devices, -1);
    assert_string_equal(n->warning, "");

    /* EKS, time-sliced T4s: 4 physical x 4 replicas = capacity 16. */
    n = &l.items[1];
    assert_string_equal(n->name, "ip-10-0-41-17.us-west-2.compute.internal");
    assert_string_equal(n->provider_id, "aws:///us-west-2b/i-0a1b2c3d4e5f60718");
    assert_string_equal(n->cloud, "aws");
    assert_string_equal(n->region, "us-west-2");
    assert_string_equal(n->zone, "us-west-2b");
    assert_string_equal(n->instance_type, "g4dn.12xlarge");
    assert_string_equal(n->product, "Tesla-T4-SHARED");
    assert_string_equal(n->product_base, "Tesla-T4");
    assert_true(n->shared);
    assert_int_equal(n->replicas, 4);
    assert_string_equal(n->sharing_strategy, "time-slicing");
    assert_int_equal(res(n, "nvidia.com/gpu")->capacity, 16);
    assert_int_equal(n->physical_gpus, 4);
    assert_string_equal(n->driver, "550.54.15");
    assert_int_equal(n->cpu_milli, 48000);
    assert_string_equal(n->warning, "");

    /* GKE, mixed MIG A100: 4 whole GPUs + 14 1g.10gb + 4 3g.40gb. */
    n = &l.items[2];
    assert_string_equal(n->cloud, "gce");
    assert_string_equal(n->region, "us-central1");
    assert_string_equal(n->zone, "us-central1-c");
    assert_string_equal(n->instance_type, "a2-ultragpu-8g");
    assert_int_equal(n->ready, 0);
    assert_true(n->unschedulable);
    assert_string_equal(n->mig_strategy, "mixed");
    assert_string_equal(n->product_base, "NVIDIA-A100-SXM4-80GB");
    assert_false(n->shared);
    assert_int_equal(n->nmigs, 2);
    assert_string_equal(n->migs[0].profile, "1g.10gb");
    assert_int_equal(n->migs[0].count, 14);
    assert_int_equal(n->migs[0].memory_mb, 9728);
    assert_string_equal(n->migs[1].profile, "3g.40gb");
    assert_int_equal(n->migs[1].count, 4);
    assert_int_equal(n->migs[1].memory_mb, 40192);
    assert_int_equal(n->nres, 3);
    assert_int_equal(res(n, "nvidia.com/gpu")->capacity, 4);
    assert_int_equal(res(n, "nvidia.com/mig-1g.10gb")->allocatable, 14);
    assert_int_equal(res(n, "nvidia.com/mig-3g.40gb")->capacity, 4);
    assert_int_equal(n->mig_devices, 18);
    assert_int_equal(n->physical_gpus, 8);
    assert_string_equal(n->driver, "535.161.08");
    assert_string_equal(n->warning, "");

    /* AKS system node without GPUs. */
    n = &l.items[3];
    assert_string_equal(n->cloud, "azure");
    assert_string_equal(n->region, "eastus");
    assert_string_equal(n->zone, "eastus-1");
    assert_string_equal(n->instance_type, "Standard_D8s_v5");
    assert_int_equal(n->vendor, GI_VENDOR_UNKNOWN);
    assert_int_equal(n->nres, 0);
    assert_int_equal(n->physical_gpus, 0);
    assert_int_equal(n->mig_devices, -1);
    assert_int_equal(n->gpu_count, -1);
    assert_int_equal(n->replicas, -1);
    assert_int_equal(n->driver_major, -1);
    assert_string_equal(n->driver, "");
    assert_int_equal(n->memory_bytes, INT64_C(32863352) * 1024);

    /* AMD node on deprecated topology labels, Ready Unknown. */
    n = &l.items[4];
    assert_int_equal(n->vendor, GI_VENDOR_AMD);
    assert_int_equal(n->ready, -1);
    assert_string_equal(n->cloud, ""); /* OCI ids have no scheme */
    assert_string_equal(n->region, "us-chicago-1");
    assert_string_equal(n->zone, "US-CHICAGO-1-AD-1");
    assert_string_equal(n->instance_type, "BM.GPU.MI300X.8");
    assert_int_equal(res(n, "amd.com/gpu")->capacity, 8);
    assert_int_equal(n->physical_gpus, 8);

    k8s_node_list_free(&l);
    k8s_node_list_free(&l); /* idempotent */
    free(data);
}

static void test_nodes_edge(void **state)
{
    struct k8s_node_list l = {0};
    char err[K8S_ERR_LEN];
    size_t len;
    char *data = slurp("nodes-edge.json", &len);
    const struct k8s_node *n;
    (void)state;

    assert_int_equal(k8s_parse_node_list(data, len, &l, err, sizeof err), GI_OK);
    assert_int_equal(l.nitems, 6);

    n = &l.items[0]; /* legacy resource name */
    assert_int_equal(n->vendor, GI_VENDOR_NVIDIA);
    assert_int_equal(res(n, "alpha.kubernetes.io/nvidia-gpu")->capacity, 2);
    assert_int_equal(n->physical_gpus, 2);

    n = &l.items[1]; /* single-strategy MIG: counts are MIG devices */
    assert_string_equal(n->product_base, "NVIDIA-A100-SXM4-40GB");
    assert_string_equal(n->mig_profile, "1g.5gb");
    assert_int_equal(n->gpu_count, 56);
    assert_int_equal(n->mig_devices, 56);
    assert_int_equal(n->physical_gpus, -1);
    assert_int_equal(n->nmigs, 0);
    assert_string_equal(n->warning, "");

    n = &l.items[2]; /* renamed shared resource, MPS, no gpu.count */
    assert_true(n->shared);
    assert_string_equal(n->product_base, "NVIDIA-L4");
    assert_int_equal(res(n, "nvidia.com/gpu.shared")->capacity, 40);
    assert_int_equal(n->physical_gpus, 4);

    n = &l.items[3]; /* malformed label: a warning, not a failure */
    assert_int_equal(n->gpu_count, -1);
    assert_int_equal(n->physical_gpus, 2);
    assert_non_null(strstr(n->warning, "nvidia.com/gpu.count"));
    assert_non_null(strstr(n->warning, "eight"));

    n = &l.items[4]; /* MIG and sharing together */
    assert_string_equal(n->product_base, "NVIDIA-A100-SXM4-40GB");
    assert_string_equal(n->mig_profile, "1g.5gb");
    assert_true(n->shared);
    assert_int_equal(n->mig_devices, 28);
    assert_int_equal(n->physical_gpus, -1);
    assert_string_equal(n->warning, "");

    n = &l.items[5]; /* capacity disagrees with count x replicas */
    assert_int_equal(n->physical_gpus, 8);
    assert_non_null(strstr(n->warning, "capacity 79"));

    k8s_node_list_free(&l);
    free(data);
}

/* ---- Pods ------------------------------------------------------------ */

static void test_pods_two_pages(void **state)
{
    struct k8s_pod_list l = {0};
    char err[K8S_ERR_LEN];
    size_t len;
    char *data = slurp("pods-page1.json", &len);
    const struct k8s_pod *p;
    (void)state;

    assert_int_equal(k8s_parse_pod_list(data, len, &l, err, sizeof err), GI_OK);
    assert_string_equal(l.meta.resource_version, "10245");
    assert_string_equal(
        l.meta.continue_token,
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAyNDUsInN0YXJ0Ijoic2VydmluZy9pbmZlcmV"
        "uY2UtN2Q5ZmI4YzZkNC14cWs5cFx1MDAwMCJ9");
    assert_int_equal(l.meta.remaining, 3);
    assert_int_equal(l.nitems, 2);

    p = &l.items[0]; /* training worker, 8 GPUs */
    assert_string_equal(p->namespace_, "ml-training");
    assert_string_equal(p->name, "llama-pretrain-worker-0");
    assert_string_equal(p->uid, "5d6e7f80-91a2-4b3c-8d4e-5f60718293a4");
    assert_string_equal(p->node_name, "dgx-h100-01");
    assert_string_equal(p->phase, "Running");
    assert_int_equal(p->start_time, 1718006405); /* 2024-06-10T08:00:05Z */
    assert_string_equal(p->owner_kind, "PyTorchJob");
    assert_string_equal(p->owner_name, "llama-pretrain");
    assert_int_equal(p->nlabels, 7);
    assert_false(p->labels_truncated);
    assert_string_equal(k8s_pod_label(p, "team"), "research-llm");
    assert_string_equal(k8s_pod_label(p, "app"), "llama-pretrain");
    assert_null(k8s_pod_label(p, "owner"));
    assert_int_equal(p->ncontainers, 1);
    assert_string_equal(p->containers[0].name, "pytorch");
    assert_false(p->containers[0].init);
    assert_int_equal(p->containers[0].nres, 1); /* rdma/ib is not a GPU */
    assert_string_equal(p->containers[0].res[0].name, "nvidia.com/gpu");
    assert_int_equal(p->containers[0].res[0].limit, 8);
    assert_int_equal(p->containers[0].res[0].request, 8);
    assert_int_equal(p->gpus, 8);
    assert_int_equal(p->mig_devices, 0);
    assert_string_equal(p->warning, "");

    p = &l.items[1]; /* inference on one MIG slice; limit only */
    assert_string_equal(p->namespace_, "serving");
    assert_string_equal(p->owner_kind, "ReplicaSet");
    assert_string_equal(p->owner_name, "inference-7d9fb8c6d4");
    assert_string_equal(k8s_pod_label(p, "team"), "search-ranking");
    assert_int_equal(p->ncontainers, 2);
    assert_int_equal(p->containers[0].nres, 1);
    assert_string_equal(p->containers[0].res[0].name, "nvidia.com/mig-1g.10gb");
    assert_int_equal(p->containers[0].res[0].limit, 1);
    assert_int_equal(p->containers[0].res[0].request, -1);
    assert_int_equal(p->containers[0].mig_devices, 1);
    assert_int_equal(p->containers[1].nres, 0);
    assert_int_equal(p->gpus, 0);
    assert_int_equal(p->mig_devices, 1);
    assert_string_equal(p->warning, "");
    k8s_pod_list_free(&l);
    free(data);

    data = slurp("pods-page2.json", &len);
    assert_int_equal(k8s_parse_pod_list(data, len, &l, err, sizeof err), GI_OK);
    assert_string_equal(l.meta.continue_token, ""); /* last page */
    assert_int_equal(l.meta.remaining, -1);
    assert_int_equal(l.nitems, 3);

    p = &l.items[0]; /* no GPUs */
    assert_string_equal(p->name, "coredns-5d78c9869d-4xk2p");
    assert_int_equal(p->gpus, 0);
    assert_int_equal(p->mig_devices, 0);
    assert_int_equal(p->containers[0].nres, 0);

    p = &l.items[1]; /* pending: no node, no start time */
    assert_string_equal(p->phase, "Pending");
    assert_string_equal(p->node_name, "");
    assert_int_equal(p->start_time, -1);
    assert_string_equal(p->owner_kind, "Job");
    assert_int_equal(p->gpus, 4);

    p = &l.items[2]; /* init container with 2 GPUs, app container with 1 */
    assert_int_equal(p->ncontainers, 2);
    assert_true(p->containers[0].init);
    assert_false(p->containers[0].sidecar);
    assert_string_equal(p->containers[0].name, "warmup");
    assert_int_equal(p->containers[0].gpus, 2);
    assert_false(p->containers[1].init);
    assert_int_equal(p->containers[1].gpus, 1);
    assert_int_equal(p->gpus, 2);
    assert_string_equal(p->owner_kind, "DaemonSet");
    assert_int_equal(p->start_time, 1717992000); /* 06:00+02:00 = 04:00Z */
    assert_string_equal(p->phase, "Succeeded");
    k8s_pod_list_free(&l);
    free(data);
}

static void test_pods_edge(void **state)
{
    struct k8s_pod_list l = {0};
    char err[K8S_ERR_LEN];
    size_t len;
    char *data = slurp("pods-edge.json", &len);
    const struct k8s_pod *p;
    (void)state;

    assert_int_equal(k8s_parse_pod_list(data, len, &l, err, sizeof err), GI_OK);
    assert_int_equal(l.meta.remaining, -1); /* null */
    assert_int_equal(l.nitems, 4);

    p = &l.items[0];                                  /* request != limit, request without limit */
    assert_string_equal(p->owner_kind, "ReplicaSet"); /* the controller, not the first */
    assert_string_equal(p->owner_name, "rs-1");
    assert_int_equal(p->containers[0].res[0].limit, 2);
    assert_int_equal(p->containers[0].res[0].request, 1);
    assert_int_equal(p->containers[0].gpus, 2);
    assert_int_equal(p->containers[1].res[0].limit, -1);
    assert_int_equal(p->containers[1].gpus, 1);
    assert_int_equal(p->gpus, 3);
    assert_non_null(strstr(p->warning, "spec.containers[0]: nvidia.com/gpu request 1 differs "
                                       "from limit 2"));
    assert_non_null(strstr(p->warning, "spec.containers[1]: amd.com/gpu requested without a "
                                       "limit"));

    p = &l.items[1]; /* sidecar init container holds its GPU throughout */
    assert_string_equal(p->owner_kind, "StatefulSet"); /* no controller: the first */
    assert_int_equal(p->ncontainers, 3);
    assert_true(p->containers[0].sidecar);
    assert_false(p->containers[1].sidecar);
    assert_int_equal(p->gpus, 3); /* prep (2) + sidecar (1) > main (1) + sidecar (1) */
    assert_int_equal(p->mig_devices, 3);
    assert_int_equal(p->start_time, 1718006405);
    assert_string_equal(p->warning, "");

    p = &l.items[2]; /* bounded label copy; legacy name; "1000m" */
    assert_int_equal(p->nlabels, K8S_MAX_POD_LABELS);
    assert_true(p->labels_truncated);
    assert_string_equal(k8s_pod_label(p, "team"), "platform");
    assert_string_equal(k8s_pod_label(p, "example.com/tag-30"), "v30");
    assert_null(k8s_pod_label(p, "example.com/tag-31"));
    assert_int_equal(p->containers[0].nres, 2);
    assert_int_equal(p->gpus, 2);
    assert_int_equal(p->start_time, -1);
    assert_string_equal(p->phase, "");
    assert_string_equal(p->uid, "");
    assert_string_equal(p->owner_kind, "");

    p = &l.items[3]; /* a JSON number where a quantity string is usual */
    assert_int_equal(p->gpus, 2);
    assert_string_equal(p->phase, "Unknown");

    k8s_pod_list_free(&l);
    free(data);
}

/* ---- Status ---------------------------------------------------------- */

static void test_status(void **state)
{
    struct k8s_pod_list l = {0};
    struct k8s_node_list nl = {0};
    char err[K8S_ERR_LEN];
    size_t len;
    char *data = slurp("status-410.json", &len);
    (void)state;

    assert_int_equal(k8s_parse_pod_list(data, len, &l, err, sizeof err), GI_CONFLICT);
    assert_true(l.status.present);
    assert_int_equal(l.status.code, 410);
    assert_string_equal(l.status.reason, "Expired");
    assert_string_equal(l.status.status, "Failure");
    assert_true(k8s_status_expired(&l.status));
    assert_int_equal(strlen(l.status.message), K8S_MSG_LEN - 1); /* cut to fit */
    assert_true(strncmp(l.status.message, "The provided continue parameter is too old", 42) == 0);
    assert_non_null(strstr(err, "410"));
    assert_int_equal(l.nitems, 0);
    assert_null(l.items);
    k8s_pod_list_free(&l);
    free(data);

    data = slurp("status-403.json", &len);
    assert_int_equal(k8s_parse_node_list(data, len, &nl, err, sizeof err), GI_UNAVAILABLE);
    assert_true(nl.status.present);
    assert_int_equal(nl.status.code, 403);
    assert_string_equal(nl.status.reason, "Forbidden");
    assert_false(k8s_status_expired(&nl.status));
    assert_non_null(strstr(err, "403 Forbidden"));
    k8s_node_list_free(&nl);
    free(data);

    /* A long message is cut on a character boundary. */
    {
        char body[600];
        int n = snprintf(body, sizeof body, "{\"kind\":\"Status\",\"code\":500,\"message\":\"");
        for (int i = 0; i < 200; i++)
            n += snprintf(body + n, sizeof body - (size_t)n, "\xc3\xa9"); /* é */
        snprintf(body + n, sizeof body - (size_t)n, "\"}");
        assert_int_equal(k8s_parse_pod_list(body, strlen(body), &l, err, sizeof err),
                         GI_UNAVAILABLE);
        assert_int_equal(strlen(l.status.message), K8S_MSG_LEN - 2); /* 127 whole é */
        assert_true(gi_text_ok(l.status.message));
        k8s_pod_list_free(&l);
    }

    /* A Gone without a code still means "restart". */
    static const char gone[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Gone\"}";
    assert_int_equal(k8s_parse_pod_list(gone, strlen(gone), &l, err, sizeof err), GI_CONFLICT);
    assert_int_equal(l.status.code, -1);
    k8s_pod_list_free(&l);
}

/* ---- Malformed input ------------------------------------------------- */

static void pods_bad(const char *json, int want_st, const char *want_err)
{
    struct k8s_pod_list l = {0};
    char err[K8S_ERR_LEN];
    int st = k8s_parse_pod_list(json, strlen(json), &l, err, sizeof err);

    if (st != want_st || strstr(err, want_err) == NULL)
        fail_msg("%s\n  -> status %d \"%s\", want %d \"%s\"", json, st, err, want_st, want_err);
    k8s_pod_list_free(&l);
}

static void nodes_bad(const char *json, int want_st, const char *want_err)
{
    struct k8s_node_list l = {0};
    char err[K8S_ERR_LEN];
    int st = k8s_parse_node_list(json, strlen(json), &l, err, sizeof err);

    if (st != want_st || strstr(err, want_err) == NULL)
        fail_msg("%s\n  -> status %d \"%s\", want %d \"%s\"", json, st, err, want_st, want_err);
    k8s_node_list_free(&l);
}

#define POD(spec)                                                                                  \
    "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\"},\"spec\":" spec "}]}"
#define CT(res) POD("{\"containers\":[{\"name\":\"c\",\"resources\":" res "}]}")

static void test_malformed(void **state)
{
    (void)state;
    pods_bad("", GI_INVALID, "not JSON");
    pods_bad("{\"kind\":\"PodList\",\"items\":[", GI_INVALID, "not JSON");
    pods_bad("[]", GI_INVALID, "not a JSON object");
    pods_bad("{\"kind\":\"PodList\",\"items\":[],\"items\":[]}", GI_INVALID, "not JSON");
    pods_bad("{\"kind\":\"PodList\"}", GI_INVALID, "items: missing");
    pods_bad("{\"kind\":\"PodList\",\"items\":{}}", GI_INVALID, "items: not an array");
    pods_bad("{\"kind\":\"NodeList\",\"items\":[]}", GI_INVALID, "kind: \"NodeList\"");
    pods_bad("{\"kind\":7,\"items\":[]}", GI_INVALID, "kind: not a string");
    pods_bad("{\"kind\":\"Status\",\"status\":\"Success\",\"code\":200}", GI_INVALID,
             "Status (Success)");
    pods_bad("{\"kind\":\"PodList\",\"metadata\":[],\"items\":[]}", GI_INVALID,
             "metadata: not an object");
    pods_bad("{\"kind\":\"PodList\",\"metadata\":{\"continue\":5},\"items\":[]}", GI_INVALID,
             "metadata.continue: not a string");
    pods_bad("{\"kind\":\"PodList\",\"metadata\":{\"remainingItemCount\":-1},\"items\":[]}",
             GI_INVALID, "metadata.remainingItemCount");
    pods_bad("{\"kind\":\"PodList\",\"metadata\":{\"remainingItemCount\":\"3\"},\"items\":[]}",
             GI_INVALID, "metadata.remainingItemCount");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"}},7]}", GI_INVALID,
             "items[1].not an object");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}}]}",
             GI_INVALID, "items[0].kind: not Pod");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{}}]}", GI_INVALID,
             "items[0].metadata.name: missing");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":[]}}]}", GI_INVALID,
             "items[0].metadata.name: not a string");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\\u0001b\"}}]}",
             GI_INVALID, "items[0].metadata.name: control characters");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\\u0000b\"}}]}",
             GI_INVALID, "not JSON");
    pods_bad(
        "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":1}}}]}",
        GI_INVALID, "items[0].metadata.labels[a]: not a string");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\"},"
             "\"status\":{\"startTime\":\"yesterday\"}}]}",
             GI_INVALID, "items[0].status.startTime: not a time");
    pods_bad("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\",\"ownerReferences\":"
             "[\"x\"]}}]}",
             GI_INVALID, "items[0].metadata.ownerReferences[0]: not an object");
    pods_bad(POD("{\"containers\":{}}"), GI_INVALID, "items[0].spec.containers: not an array");
    pods_bad(POD("{\"initContainers\":[1]}"), GI_INVALID,
             "items[0].spec.initContainers[0]: not an object");
    pods_bad(CT("[]"), GI_INVALID, "items[0].spec.containers[0].resources: not an object");
    pods_bad(CT("{\"limits\":{\"nvidia.com/gpu\":\"0.5\"}}"), GI_INVALID,
             "items[0].spec.containers[0].resources.limits[nvidia.com/gpu]: fractional count "
             "\"0.5\"");
    pods_bad(CT("{\"requests\":{\"nvidia.com/gpu\":\"500m\"}}"), GI_INVALID,
             "resources.requests[nvidia.com/gpu]: fractional count \"500m\"");
    pods_bad(CT("{\"limits\":{\"nvidia.com/mig-1g.5gb\":\"-1\"}}"), GI_INVALID,
             "limits[nvidia.com/mig-1g.5gb]: negative count");
    pods_bad(CT("{\"limits\":{\"amd.com/gpu\":\"two\"}}"), GI_INVALID,
             "limits[amd.com/gpu]: malformed quantity \"two\"");
    pods_bad(CT("{\"limits\":{\"nvidia.com/gpu\":true}}"), GI_INVALID,
             "limits[nvidia.com/gpu]: not a quantity");
    pods_bad(CT("{\"limits\":{\"nvidia.com/gpu\":1.5}}"), GI_INVALID,
             "limits[nvidia.com/gpu]: not a quantity");
    pods_bad(CT("{\"limits\":{\"nvidia.com/gpu\":-2}}"), GI_INVALID,
             "limits[nvidia.com/gpu]: negative count");
    pods_bad(CT("{\"limits\":{\"nvidia.com/gpu\":\"1e30\"}}"), GI_TOO_LARGE,
             "limits[nvidia.com/gpu]: quantity \"1e30\" too large");
    /* Absurd counts saturate instead of overflowing. */
    {
        static const char big[] =
            POD("{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
                "\"9223372036854775807\",\"amd.com/gpu\":\"9e18\"}}},{\"resources\":{"
                "\"limits\":{\"nvidia.com/gpu\":\"9e18\"}}}]}");
        static const char node[] =
            "{\"items\":[{\"metadata\":{\"name\":\"n\",\"labels\":{"
            "\"nvidia.com/gpu.count\":\"999999999999999999\",\"nvidia.com/gpu.replicas\":"
            "\"999999999999999999\"}},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"1\","
            "\"nvidia.com/mig-1g.5gb\":\"9e18\",\"nvidia.com/mig-2g.10gb\":\"9e18\"}}}]}";
        struct k8s_pod_list l = {0};
        struct k8s_node_list nl = {0};
        char err[K8S_ERR_LEN];
        assert_int_equal(k8s_parse_pod_list(big, strlen(big), &l, err, sizeof err), GI_OK);
        assert_int_equal(l.items[0].gpus, INT64_MAX);
        k8s_pod_list_free(&l);
        assert_int_equal(k8s_parse_node_list(node, strlen(node), &nl, err, sizeof err), GI_OK);
        assert_int_equal(nl.items[0].mig_devices, INT64_MAX);
        assert_int_equal(nl.items[0].physical_gpus, 999999999999999999);
        assert_non_null(strstr(nl.items[0].warning, "replicas"));
        k8s_node_list_free(&nl);
    }
    /* A malformed quantity on a resource gpuinv does not read is ignored. */
    {
        static const char ok[] = CT("{\"limits\":{\"cpu\":\"lots\",\"nvidia.com/gpu\":\"1\"}}");
        struct k8s_pod_list l = {0};
        char err[K8S_ERR_LEN];
        assert_int_equal(k8s_parse_pod_list(ok, strlen(ok), &l, err, sizeof err), GI_OK);
        assert_int_equal(l.items[0].gpus, 1);
        k8s_pod_list_free(&l);
    }

    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":"
              "{\"capacity\":{\"nvidia.com/gpu\":\"500m\"}}}]}",
              GI_INVALID, "items[0].status.capacity[nvidia.com/gpu]: fractional count \"500m\"");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":"
              "{\"allocatable\":{\"nvidia.com/gpu\":\"x\"}}}]}",
              GI_INVALID, "items[0].status.allocatable[nvidia.com/gpu]: malformed");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":"
              "{\"capacity\":{\"memory\":\"lots\"}}}]}",
              GI_INVALID, "items[0].status.capacity[memory]: bad quantity");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":"
              "{\"conditions\":[[]]}}]}",
              GI_INVALID, "items[0].status.conditions[0]: not an object");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":"
              "{\"conditions\":[{\"type\":\"Ready\"}]}}]}",
              GI_INVALID, "items[0].status.conditions[0].status: not a string");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\",\"labels\":"
              "{\"nvidia.com/gpu.product\":7}}}]}",
              GI_INVALID, "items[0].metadata.labels[nvidia.com/gpu.product]: not a string");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\",\"labels\":"
              "{\"nvidia.com/gpu.product\":\"0123456789012345678901234567890123456789012345678"
              "901234567890123\"}}}]}",
              GI_TOO_LARGE, "items[0].metadata.labels[nvidia.com/gpu.product]: too long");
    nodes_bad("{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},\"spec\":7}]}",
              GI_INVALID, "items[0].spec: not an object");
    nodes_bad("{\"kind\":\"PodList\",\"items\":[]}", GI_INVALID, "where a NodeList was expected");
}

/* Bounds: resource entries, containers, items, name lengths. */
static void test_bounds(void **state)
{
    char *buf = malloc(1 << 20);
    size_t n = 0;
    (void)state;
    assert_non_null(buf);

    /* 17 MIG resources on one node. */
    n = (size_t)snprintf(buf, 1 << 20,
                         "{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n\"},"
                         "\"status\":{\"capacity\":{");
    for (int i = 0; i <= K8S_MAX_NODE_RES; i++)
        n += (size_t)snprintf(buf + n, (1 << 20) - n, "%s\"nvidia.com/mig-%dg.5gb\":\"1\"",
                              i ? "," : "", i);
    snprintf(buf + n, (1 << 20) - n, "}}}]}");
    nodes_bad(buf, GI_TOO_LARGE, "items[0].status: more than 16 GPU resources");

    /* 17 containers in one pod. */
    n = (size_t)snprintf(buf, 1 << 20,
                         "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"containers\":[");
    for (int i = 0; i <= K8S_MAX_CONTAINERS; i++)
        n += (size_t)snprintf(buf + n, (1 << 20) - n, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
    snprintf(buf + n, (1 << 20) - n, "]}}]}");
    pods_bad(buf, GI_TOO_LARGE, "items[0].spec: more than 16 containers");

    /* 9 GPU resources in one container. */
    n = (size_t)snprintf(buf, 1 << 20, "%s",
                         "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{");
    for (int i = 0; i <= K8S_MAX_CONTAINER_RES; i++)
        n += (size_t)snprintf(buf + n, (1 << 20) - n, "%s\"nvidia.com/mig-%dg.5gb\":\"1\"",
                              i ? "," : "", i);
    snprintf(buf + n, (1 << 20) - n, "}}}]}}]}");
    pods_bad(buf, GI_TOO_LARGE, "more than 8 GPU resources");

    /* Too many items in one page. */
    n = (size_t)snprintf(buf, 1 << 20, "{\"kind\":\"PodList\",\"items\":[");
    for (int i = 0; i <= K8S_MAX_ITEMS; i++)
        n += (size_t)snprintf(buf + n, (1 << 20) - n, "%s{}", i ? "," : "");
    snprintf(buf + n, (1 << 20) - n, "]}");
    pods_bad(buf, GI_TOO_LARGE, "items: more than 2000");

    /* A name longer than a DNS subdomain. */
    n = (size_t)snprintf(buf, 1 << 20,
                         "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"");
    memset(buf + n, 'a', K8S_NAME_LEN);
    n += K8S_NAME_LEN;
    snprintf(buf + n, (1 << 20) - n, "\"}}]}");
    pods_bad(buf, GI_TOO_LARGE, "items[0].metadata.name: too long");

    /* A continue token at its bound. */
    n = (size_t)snprintf(buf, 1 << 20, "{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"");
    memset(buf + n, 'A', K8S_TOKEN_LEN);
    n += K8S_TOKEN_LEN;
    snprintf(buf + n, (1 << 20) - n, "\"},\"items\":[]}");
    pods_bad(buf, GI_TOO_LARGE, "metadata.continue: too long");

    /* A body past K8S_MAX_BODY is refused before parsing. */
    {
        struct k8s_pod_list l = {0};
        char err[K8S_ERR_LEN];
        assert_int_equal(k8s_parse_pod_list("{}", (size_t)K8S_MAX_BODY + 1, &l, err, sizeof err),
                         GI_TOO_LARGE);
        k8s_pod_list_free(&l);
    }

    /* A NULL error buffer is allowed. */
    {
        struct k8s_pod_list l = {0};
        assert_int_equal(k8s_parse_pod_list("x", 1, &l, NULL, 0), GI_INVALID);
        k8s_pod_list_free(&l);
        k8s_pod_list_free(NULL);
        k8s_node_list_free(NULL);
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity_count),
        cmocka_unit_test(test_quantity_tiny_is_fraction),
        cmocka_unit_test(test_quantity_bytes_milli),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_nodes_edge),
        cmocka_unit_test(test_pods_two_pages),
        cmocka_unit_test(test_pods_edge),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
