/* NVML collection through the real dlopen path, against the stand-in
 * library (tests/fake-nvml) with one configuration per scenario. */
#include "collect/nvml.h"
#include "core/status.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the built stand-in library"
#endif

/* Asserts a reading equals want exactly (NAN: is absent), printing both. */
#define assert_reading(got, want) check_reading((got), (want), #got, __FILE__, __LINE__)
static void check_reading(double got, double want, const char *what, const char *file, int line)
{
    if (isnan(want) ? isnan(got) : got == want)
        return;
    fail_msg("%s:%d: %s is %.6f, want %.6f", file, line, what, got, want);
}

/* Opens the given library with the named configuration; asserts success. */
static struct nvml *open_with(const char *lib, const char *config)
{
    char path[512], err[256];
    struct nvml *h = NULL;

    snprintf(path, sizeof path, "%s/%s", FAKE_NVML_CONFIGS, config);
    setenv("FAKE_NVML_CONFIG", path, 1);
    int rc = nvml_open(lib, &h, err, sizeof err);
    if (rc != NVML_OPEN_OK)
        fail_msg("nvml_open(%s, %s): %d %s", lib, config, rc, err);
    assert_non_null(h);
    return h;
}

static struct nvml_dev_status status_of(const struct nvml *h, size_t i)
{
    struct nvml_dev_status st;

    assert_int_equal(nvml_device_status(h, i, &st), GI_OK);
    return st;
}

/* Finds the process pid in set; fails the test when absent. */
static const struct gi_proc_obs *proc(const struct gi_obs_set *set, int64_t pid)
{
    for (size_t i = 0; i < set->nprocs; i++)
        if (set->procs[i].pid == pid)
            return &set->procs[i];
    fail_msg("pid %lld not listed", (long long)pid);
    return NULL;
}

static void test_h100x8(void **state)
{
    static const char *const buses[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LIB, "h100x8.json");

    assert_string_equal(nvml_symbol(h, NVML_FN_INIT), "nvmlInit_v2");
    assert_string_equal(nvml_symbol(h, NVML_FN_COUNT), "nvmlDeviceGetCount_v2");
    assert_string_equal(nvml_symbol(h, NVML_FN_HANDLE), "nvmlDeviceGetHandleByIndex_v2");
    assert_string_equal(nvml_symbol(h, NVML_FN_PCI), "nvmlDeviceGetPciInfo_v3");
    assert_string_equal(nvml_symbol(h, NVML_FN_MEMORY), "nvmlDeviceGetMemoryInfo_v2");
    assert_string_equal(nvml_symbol(h, NVML_FN_PROCS), "nvmlDeviceGetComputeRunningProcesses_v3");
    assert_string_equal(nvml_symbol(h, NVML_FN_MIG_HANDLE), "nvmlDeviceGetMigDeviceHandleByIndex");
    assert_string_equal(nvml_driver_version(h), "550.54.15");

    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 8);
    assert_int_equal(nvml_device_count(h), 8);
    for (int i = 0; i < 8; i++) {
        const struct gi_gpu_obs *g = &set.gpus[i];
        char want[GI_UUID_LEN], bus[GI_BUS_LEN], serial[32];
        snprintf(want, sizeof want, "GPU-5c0f3a1e-8d2b-4f7a-9e61-0000000000%02d", i);
        snprintf(bus, sizeof bus, "0000:%s:00.0", buses[i]);
        snprintf(serial, sizeof serial, "16549220%05d", 1000 + i);
        assert_string_equal(g->uuid, want);
        assert_string_equal(g->parent_uuid, "");
        assert_int_equal(g->index, i);
        assert_int_equal(g->vendor, GI_VENDOR_NVIDIA);
        assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
        assert_string_equal(g->serial, serial);
        assert_string_equal(g->pci_bus_id, bus);
        assert_string_equal(g->driver, "550.54.15");
        assert_int_equal(g->mig_mode, 0);
        assert_int_equal(g->mig_instance, -1);
        assert_reading(g->memory_total_mib, 81559);
        assert_reading(g->memory_used_mib, 1024 + i);
        if (i != 7)
            assert_reading(g->util_gpu_pct, 10 * i);
        assert_reading(g->util_mem_pct, 5 * i);
        assert_reading(g->temp_c, 30 + i);
        assert_reading(g->power_w, 70.5 + i);
        assert_reading(g->power_limit_w, 700);
        assert_int_equal(g->ecc_corrected, i);
        assert_int_equal(g->ecc_uncorrected, 0);
        assert_true(g->ts_ms > 0);
        struct nvml_dev_status st = status_of(h, (size_t)i);
        assert_int_equal(st.index, i);
        assert_int_equal(st.lost, 0);
        assert_string_equal(st.uuid, want);
    }
    /* A sine wave between 10 and 90. */
    assert_true(set.gpus[7].util_gpu_pct >= 10 && set.gpus[7].util_gpu_pct <= 90);

    /* Sampling walks GPU 0's lists: utilization 0 → 25 → 50, memory
     * 1024 → 2048 → 1024; identity stays. */
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    assert_reading(set.gpus[0].util_gpu_pct, 25);
    assert_reading(set.gpus[0].memory_used_mib, 2048);
    assert_reading(set.gpus[0].memory_total_mib, 81559);
    assert_reading(set.gpus[3].util_gpu_pct, 30);
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    assert_reading(set.gpus[0].util_gpu_pct, 50);
    assert_reading(set.gpus[0].memory_used_mib, 1024);
    assert_string_equal(set.gpus[0].serial, "1654922001000");

    /* 2 processes on GPU 0 and 70 on GPU 1: more than the first buffer. */
    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 72);
    const struct gi_proc_obs *p = proc(&set, 4242);
    assert_string_equal(p->gpu_uuid, set.gpus[0].uuid);
    assert_string_equal(p->pci_bus_id, "0000:18:00.0");
    assert_reading(p->used_mib, 1000);
    assert_reading(proc(&set, 4243)->used_mib, 24);
    for (int k = 0; k < 70; k++) {
        p = proc(&set, 5000 + k);
        assert_string_equal(p->gpu_uuid, set.gpus[1].uuid);
        assert_string_equal(p->pci_bus_id, "0000:2a:00.0");
        assert_reading(p->used_mib, k);
        assert_int_equal(p->uid, -1);
    }

    gi_obs_free(&set);
    nvml_close(h);
}

static void test_mig(void **state)
{
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LIB, "a100-mig.json");
    const struct gi_gpu_obs *g;

    assert_int_equal(nvml_discover(h, &set), GI_OK);
    /* GPU 0 and instances in slots 0, 1, 3; GPU 1 and one; GPU 2. */
    assert_int_equal(set.ngpus, 7);
    assert_int_equal(nvml_device_count(h), 7);

    g = &set.gpus[0];
    assert_string_equal(g->uuid, "GPU-a1000000-0000-4000-8000-000000000001");
    assert_int_equal(g->mig_mode, 1);
    assert_string_equal(g->pci_bus_id, "0000:07:00.0");
    assert_reading(g->memory_total_mib, 40960);

    static const struct {
        const char *uuid, *profile;
        int gi;
        double total, used;
    } want[] = {
        {"MIG-11111111-1111-5111-8111-111111111111", "3g.20gb", 1, 19968, 13},
        {"MIG-22222222-2222-5222-8222-222222222222", "2g.10gb", 2, 9856, 7},
        {"MIG-99999999-9999-5999-8999-999999999999", "1g.5gb", 9, 4864, 0},
    };
    for (int i = 0; i < 3; i++) {
        g = &set.gpus[1 + i];
        assert_string_equal(g->uuid, want[i].uuid);
        assert_string_equal(g->parent_uuid, "GPU-a1000000-0000-4000-8000-000000000001");
        assert_string_equal(g->mig_profile, want[i].profile);
        assert_int_equal(g->mig_instance, want[i].gi);
        assert_int_equal(g->index, 0);
        assert_string_equal(g->serial, "");
        assert_reading(g->memory_total_mib, want[i].total);
        assert_reading(g->memory_used_mib, want[i].used);
        assert_string_equal(g->driver, "535.161.08");
        struct nvml_dev_status st = status_of(h, (size_t)(1 + i));
        assert_int_equal(st.mig, 1);
        assert_int_equal(st.index, 0);
    }
    /* The first instance refuses per-instance readings: absent, not 0. */
    g = &set.gpus[1];
    assert_reading(g->util_gpu_pct, NAN);
    assert_reading(g->temp_c, NAN);
    assert_reading(g->power_w, NAN);
    assert_int_equal(g->ecc_corrected, -1);

    assert_string_equal(set.gpus[4].uuid, "GPU-a1000000-0000-4000-8000-000000000002");
    assert_string_equal(set.gpus[5].uuid, "MIG-33333333-3333-5333-8333-333333333333");
    assert_string_equal(set.gpus[5].parent_uuid, set.gpus[4].uuid);
    assert_string_equal(set.gpus[5].mig_profile, "7g.40gb");
    assert_int_equal(set.gpus[5].index, 1);
    assert_string_equal(set.gpus[6].uuid, "GPU-a1000000-0000-4000-8000-000000000003");
    assert_int_equal(set.gpus[6].mig_mode, 0);
    assert_int_equal(set.gpus[6].index, 2);

    /* Sampling refreshes instances too. */
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    assert_reading(set.gpus[2].memory_used_mib, 7);

    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 6);
    /* GPU 0 refuses the whole-GPU listing: each instance is asked. */
    assert_int_equal(status_of(h, 0).procs_error, NVML_RC_NO_PERMISSION);
    assert_string_equal(proc(&set, 7001)->gpu_uuid, want[0].uuid);
    assert_reading(proc(&set, 7001)->used_mib, 512);
    assert_string_equal(proc(&set, 7002)->gpu_uuid, want[1].uuid);
    assert_string_equal(proc(&set, 7003)->gpu_uuid, want[1].uuid);
    assert_string_equal(proc(&set, 7003)->pci_bus_id, "0000:07:00.0");
    /* GPU 1 lists its processes with GPU instance ids. */
    assert_string_equal(proc(&set, 8001)->gpu_uuid, "MIG-33333333-3333-5333-8333-333333333333");
    assert_string_equal(proc(&set, 8002)->gpu_uuid, "GPU-a1000000-0000-4000-8000-000000000002");
    assert_string_equal(proc(&set, 8001)->pci_bus_id, "0000:0f:00.0");
    assert_string_equal(proc(&set, 9001)->gpu_uuid, "GPU-a1000000-0000-4000-8000-000000000003");

    gi_obs_free(&set);
    nvml_close(h);
}

static void test_field_errors(void **state)
{
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LIB, "errors.json");
    const struct gi_gpu_obs *g;

    assert_string_equal(nvml_driver_version(h), "");
    assert_int_equal(nvml_discover(h, &set), GI_OK);
    /* The third GPU cannot be opened: left out, its status says why. */
    assert_int_equal(set.ngpus, 2);
    assert_int_equal(nvml_device_count(h), 3);
    struct nvml_dev_status st = status_of(h, 2);
    assert_int_equal(st.index, 2);
    assert_int_equal(st.handle_error, NVML_RC_NO_PERMISSION);
    assert_int_equal(st.lost, 0);

    g = &set.gpus[0];
    assert_string_equal(g->uuid, "GPU-e0000000-0000-4000-8000-000000000000");
    assert_string_equal(g->name, "Tesla T4");
    assert_string_equal(g->serial, "");
    assert_string_equal(g->driver, "");
    assert_string_equal(g->pci_bus_id, "0000:3b:00.0");
    assert_int_equal(g->mig_mode, -1);
    assert_reading(g->memory_total_mib, 15360);
    assert_reading(g->memory_used_mib, 5);
    assert_reading(g->util_gpu_pct, NAN);
    assert_reading(g->util_mem_pct, NAN);
    assert_reading(g->temp_c, NAN);
    assert_reading(g->power_w, NAN);
    assert_reading(g->power_limit_w, 70);
    assert_int_equal(g->ecc_corrected, -1);
    assert_int_equal(g->ecc_uncorrected, -1);

    g = &set.gpus[1];
    assert_string_equal(g->serial, "1321000000001");
    assert_string_equal(g->pci_bus_id, "");
    assert_reading(g->memory_total_mib, NAN);
    assert_reading(g->memory_used_mib, NAN);
    assert_reading(g->power_limit_w, NAN);
    /* Zero readings NVML did give are kept as zero. */
    assert_reading(g->temp_c, 0);
    assert_reading(g->power_w, 0);
    assert_reading(g->util_gpu_pct, 0);
    assert_int_equal(g->ecc_corrected, 0);

    /* Refusals stay refusals on every sample. */
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    assert_reading(set.gpus[0].temp_c, NAN);
    assert_reading(set.gpus[1].memory_total_mib, NAN);

    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 1);
    assert_int_equal(status_of(h, 0).procs_error, NVML_RC_NO_PERMISSION);
    const struct gi_proc_obs *p = proc(&set, 31337);
    assert_reading(p->used_mib, NAN);
    assert_string_equal(p->gpu_uuid, "GPU-e0000000-0000-4000-8000-000000000001");
    assert_string_equal(p->pci_bus_id, "");

    gi_obs_free(&set);
    nvml_close(h);
}

/* Run without privileges: the process list is refused on one GPU (a
 * warning, the GPU kept with its readings), a process NVML gives no pid
 * for is anonymous, and readings out of range are absent. */
static void test_unprivileged(void **state)
{
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LIB, "unprivileged.json");
    const struct gi_gpu_obs *g;

    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 2);
    g = &set.gpus[0];
    assert_string_equal(g->uuid, "GPU-f0000000-0000-4000-8000-000000000000");
    assert_reading(g->memory_total_mib, 46068);
    assert_reading(g->memory_used_mib, NAN); /* above the total */
    assert_reading(g->util_gpu_pct, NAN);    /* 101 % */
    assert_reading(g->util_mem_pct, 12);
    assert_reading(g->temp_c, NAN); /* 4294967295 */
    assert_reading(g->power_w, 88);
    g = &set.gpus[1];
    assert_reading(g->power_w, NAN); /* 4294967 W */
    assert_reading(g->util_gpu_pct, 55);
    assert_reading(g->temp_c, 47);
    assert_int_equal(set.nwarnings, 4);

    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(status_of(h, 0).procs_error, NVML_RC_NO_PERMISSION);
    assert_int_equal(set.nwarnings, 5);
    assert_non_null(strstr(set.warning, "NVML GPU 0: memory used 90000 is out of range"));
    assert_int_equal(set.nprocs, 2);
    assert_int_equal(set.procs[0].pid, -1); /* NVML gave pid 0 */
    assert_reading(set.procs[0].used_mib, 2048);
    assert_string_equal(set.procs[0].gpu_uuid, "GPU-f0000000-0000-4000-8000-000000000001");
    assert_int_equal(proc(&set, 5150)->pid, 5150);

    /* Sampling drops the same readings again without counting them twice. */
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    assert_reading(set.gpus[0].temp_c, NAN);
    assert_reading(set.gpus[1].power_w, NAN);
    assert_int_equal(set.nwarnings, 5);
    gi_obs_free(&set);
    nvml_close(h);
}

static void test_open_failures(void **state)
{
    char err[256], path[512];
    struct nvml *h = (struct nvml *)&h; /* must be reset to NULL */

    snprintf(path, sizeof path, "%s/init-fail.json", FAKE_NVML_CONFIGS);
    setenv("FAKE_NVML_CONFIG", path, 1);
    assert_int_equal(nvml_open(FAKE_NVML_LIB, &h, err, sizeof err), NVML_OPEN_INIT);
    assert_null(h);
    assert_string_equal(err, "NVML init failed: Driver Not Loaded (9)");

    unsetenv("FAKE_NVML_CONFIG");
    assert_int_equal(nvml_open(FAKE_NVML_LIB, &h, err, sizeof err), NVML_OPEN_INIT);
    assert_non_null(strstr(err, "(9)"));

    assert_int_equal(nvml_open("/nonexistent/libnvidia-ml.so.1", &h, err, sizeof err),
                     NVML_OPEN_NOLIB);
    assert_null(h);
    assert_non_null(strstr(err, "NVML library not found"));

    /* A library that is not NVML at all. */
    assert_int_equal(nvml_open("libm.so.6", &h, err, sizeof err), NVML_OPEN_NOSYM);
    assert_null(h);
    assert_string_equal(err, "NVML library lacks nvmlInit_v2");

    /* No buffer for the message is fine. */
    assert_int_equal(nvml_open("/nonexistent/x.so", &h, NULL, 0), NVML_OPEN_NOLIB);
    nvml_close(NULL);
}

static void test_env_path(void **state)
{
    char err[256], path[512];
    struct nvml *h = NULL;
    struct gi_obs_set set = {0};

    snprintf(path, sizeof path, "%s/h100x8.json", FAKE_NVML_CONFIGS);
    setenv("FAKE_NVML_CONFIG", path, 1);
    setenv("GPUINV_NVML_LIB", FAKE_NVML_LIB, 1);
    assert_int_equal(nvml_open(NULL, &h, err, sizeof err), NVML_OPEN_OK);
    unsetenv("GPUINV_NVML_LIB");
    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 8);
    /* Discovering again starts over. */
    gi_obs_free(&set);
    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 8);
    assert_int_equal(nvml_device_count(h), 8);
    struct nvml_dev_status st;
    assert_int_equal(nvml_device_status(h, 8, &st), GI_NOT_FOUND);
    gi_obs_free(&set);
    nvml_close(h);
}

static void test_lost(void **state)
{
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LIB, "lost.json");
    struct nvml_dev_status st;

    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 4);
    assert_string_equal(set.gpus[0].uuid, "GPU-10000000-0000-4000-8000-000000000000");
    assert_reading(set.gpus[0].temp_c, 25);
    assert_int_equal(status_of(h, 0).lost, 0);

    /* Lost from the start: still reported, by index, with nothing read. */
    for (int i = 1; i <= 2; i++) {
        const struct gi_gpu_obs *g = &set.gpus[i];
        assert_int_equal(g->index, i);
        assert_string_equal(g->uuid, "");
        assert_reading(g->memory_total_mib, NAN);
        assert_reading(g->temp_c, NAN);
        st = status_of(h, (size_t)i);
        assert_int_equal(st.lost, 1);
    }
    assert_int_equal(status_of(h, 1).handle_error, 0);
    assert_int_equal(status_of(h, 2).handle_error, NVML_RC_GPU_IS_LOST);

    /* GPU 3 answers the 13 calls of discovery, then is lost. */
    assert_string_equal(set.gpus[3].uuid, "GPU-10000000-0000-4000-8000-000000000003");
    assert_reading(set.gpus[3].temp_c, 25);
    assert_int_equal(status_of(h, 3).lost, 0);
    assert_int_equal(nvml_sample(h, &set), GI_OK);
    st = status_of(h, 3);
    assert_int_equal(st.lost, 1);
    assert_string_equal(st.uuid, "GPU-10000000-0000-4000-8000-000000000003");
    assert_reading(set.gpus[3].temp_c, NAN);
    assert_reading(set.gpus[3].util_gpu_pct, NAN);
    assert_reading(set.gpus[3].memory_total_mib, 46068);
    assert_reading(set.gpus[0].temp_c, 25);

    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 1);
    assert_int_equal(set.procs[0].pid, 100);

    gi_obs_free(&set);
    nvml_close(h);
}

static void test_legacy(void **state)
{
    struct gi_obs_set set = {0};
    struct nvml *h = open_with(FAKE_NVML_LEGACY_LIB, "h100x8.json");

    assert_string_equal(nvml_symbol(h, NVML_FN_INIT), "nvmlInit");
    assert_string_equal(nvml_symbol(h, NVML_FN_COUNT), "nvmlDeviceGetCount");
    assert_string_equal(nvml_symbol(h, NVML_FN_HANDLE), "nvmlDeviceGetHandleByIndex");
    assert_string_equal(nvml_symbol(h, NVML_FN_PCI), "nvmlDeviceGetPciInfo");
    assert_string_equal(nvml_symbol(h, NVML_FN_MEMORY), "nvmlDeviceGetMemoryInfo");
    assert_string_equal(nvml_symbol(h, NVML_FN_PROCS), "nvmlDeviceGetComputeRunningProcesses");
    assert_null(nvml_symbol(h, NVML_FN_MIG_MODE));
    assert_null(nvml_symbol(h, NVML_FN_MIG_HANDLE));
    assert_null(nvml_symbol(h, NVML_FN_GI_ID));

    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 8);
    assert_string_equal(set.gpus[5].pci_bus_id, "0000:ab:00.0");
    assert_string_equal(set.gpus[5].uuid, "GPU-5c0f3a1e-8d2b-4f7a-9e61-000000000005");
    assert_reading(set.gpus[5].memory_total_mib, 81559);
    assert_reading(set.gpus[5].memory_used_mib, 1029);
    assert_reading(set.gpus[5].power_w, 75.5);
    assert_int_equal(set.gpus[5].mig_mode, -1);

    /* Old 16-byte process records. */
    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 72);
    assert_reading(proc(&set, 4242)->used_mib, 1000);
    assert_reading(proc(&set, 5069)->used_mib, 69);
    assert_string_equal(proc(&set, 5069)->gpu_uuid, set.gpus[1].uuid);
    gi_obs_free(&set);
    nvml_close(h);

    /* Without MIG functions a MIG GPU is one GPU, and a refused listing
     * stays refused. */
    h = open_with(FAKE_NVML_LEGACY_LIB, "a100-mig.json");
    assert_int_equal(nvml_discover(h, &set), GI_OK);
    assert_int_equal(set.ngpus, 3);
    assert_string_equal(set.gpus[1].uuid, "GPU-a1000000-0000-4000-8000-000000000002");
    assert_int_equal(nvml_processes(h, &set), GI_OK);
    assert_int_equal(set.nprocs, 3);
    assert_string_equal(proc(&set, 8001)->gpu_uuid, "GPU-a1000000-0000-4000-8000-000000000002");
    gi_obs_free(&set);
    nvml_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100x8),        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_field_errors),  cmocka_unit_test(test_unprivileged),
        cmocka_unit_test(test_open_failures), cmocka_unit_test(test_env_path),
        cmocka_unit_test(test_lost),          cmocka_unit_test(test_legacy),
    };

    unsetenv("GPUINV_NVML_LIB");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
