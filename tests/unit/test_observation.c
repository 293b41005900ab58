/* Unit tests for src/core/observation.c: PCI bus id normalization, the
 * placeholders that mean "absent", and observation sets (growth, cap). */
#include "unit.h"

#include "core/observation.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void pci_ok(const char *in, const char *want)
{
    char out[GI_BUS_LEN];

    memset(out, 'x', sizeof out);
    if (gi_pci_normalize(in, out) != 0)
        fail_msg("gi_pci_normalize(\"%s\") refused", in);
    if (strcmp(out, want) != 0)
        fail_msg("gi_pci_normalize(\"%s\") = \"%s\", want \"%s\"", in, out, want);
}

static void pci_bad(const char *in)
{
    char out[GI_BUS_LEN];

    if (gi_pci_normalize(in, out) == 0)
        fail_msg("gi_pci_normalize(\"%s\") accepted as \"%s\"", in, out);
}

static void test_pci_domains(void **state)
{
    pci_ok("00000000:83:00.0", "0000:83:00.0"); /* nvidia-smi */
    pci_ok("0000:83:00.0", "0000:83:00.0");     /* sysfs */
    pci_ok("83:00.0", "0000:83:00.0");          /* lspci without domain */
    pci_ok("00000001:01:1f.7", "0001:01:1f.7");
    pci_ok("0001:01:1f.7", "0001:01:1f.7");
    pci_ok("ffff:ff:1f.7", "ffff:ff:1f.7");
    pci_ok("0:1:2.3", "0000:01:02.3");
}

static void test_pci_case_and_spaces(void **state)
{
    pci_ok("00000000:CA:00.0", "0000:ca:00.0"); /* dcgm-exporter label */
    pci_ok("0000:Ca:1F.0", "0000:ca:1f.0");
    pci_ok("0000:ca:00.0", "0000:ca:00.0");
    pci_ok(" 00000000:01:00.0", "0000:01:00.0"); /* CSV after ", " */
    pci_ok("00000000:01:00.0  ", "0000:01:00.0");
}

static void test_pci_garbage(void **state)
{
    static const char *const bad[] = {
        "",
        " ",
        "[N/A]",
        "N/A",
        "83",
        "83:00",
        "0000:83:00",
        "0000:83:00.",
        ":83:00.0",
        "0000::00.0",
        "0000:83:00.0.1",
        "0000:0000:83:00.0",
        "0:0:0:0:0:0:0:0:0:0:0:0.0",
        "1.2.3.4.5.6.7.8.9",
        "0000.83.00.0",
        "0000:83.00:0",
        "0000:83:00:0",
        "0000:83:00.8",      /* function past 7 */
        "0000:83:20.0",      /* device past 0x1f */
        "0000:100:00.0",     /* bus past 0xff */
        "00010000:83:00.0",  /* domain past 16 bits */
        "000000000:83:00.0", /* nine domain digits */
        "0000:83:00.0x",
        "0000:83:00.0 junk",
        "0000:g3:00.0",
        "0000:-3:00.0",
        "0000:+3:00.0",
        "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        pci_bad(bad[i]);
}

static void test_placeholders(void **state)
{
    /* Every spelling of "absent" in the nvidia-smi and dcgm-exporter
     * reference, with the padding CSV leaves around values. */
    static const char *const absent[] = {
        "",
        " ",
        "N/A",
        "n/a",
        " N/A",
        "[N/A]",
        " [N/A] ",
        "[Not Supported]",
        "[Insufficient Permissions]",
        "[Unknown Error]",
        "[Requested functionality has been deprecated]",
        "<<<NULL>>>",
        "<<<NOT_SUPPORTED>>>",
        "[GPU is lost]",
        "ERR!",
        " ERR! ",
        "Not Supported",
        "Unknown Error",
        "Insufficient Permissions",
        "GPU is lost",
        "None",
        "9223372036854775792", /* DCGM int64 blank */
        "9223372036854775794", /* DCGM int64 not supported */
        "9223372036854775807",
        "140737488355328", /* DCGM double blank, 2^47 */
        "140737488355330.000000",
        "1.40737488355328e+14",
    };
    static const char *const present[] = {
        "0",
        "0.0",
        "00000000:01:00.0",
        "NVIDIA H200",
        "GPU-00000000-0000-0000-0000-000000000000",
        "0000000000000", /* a serial of zeros is a value, judged elsewhere */
        "143771 MiB",
        "78.28 W",
        "100.00 %",
        "Disabled",
        "Enabled",
        "N/A-ish",
        "ERR",
        "ERR!!",
        "[N/A",
        "N/A]",
        "9223372036854775791",
        "9223372036854775808", /* past int64: not a DCGM blank */
        "2147483632",
        "140737488355327",
        "140737488355344",
        "-9223372036854775794",
    };
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        if (!gi_is_placeholder(absent[i]))
            fail_msg("\"%s\" should mean absent", absent[i]);
    for (size_t i = 0; i < sizeof present / sizeof *present; i++)
        if (gi_is_placeholder(present[i]))
            fail_msg("\"%s\" should be a value", present[i]);
}

static void test_gpu_obs_init(void **state)
{
    struct gi_gpu_obs g;

    memset(&g, 0x5a, sizeof g);
    gi_gpu_obs_init(&g);
    assert_string_equal(g.uuid, "");
    assert_string_equal(g.pci_bus_id, "");
    assert_int_equal(g.index, -1);
    assert_int_equal(g.mig_mode, -1);
    assert_int_equal(g.mig_instance, -1);
    assert_int_equal(g.vendor, GI_VENDOR_UNKNOWN);
    assert_true(isnan(g.memory_total_mib));
    assert_true(isnan(g.memory_used_mib));
    assert_true(isnan(g.util_gpu_pct));
    assert_true(isnan(g.util_mem_pct));
    assert_true(isnan(g.temp_c));
    assert_true(isnan(g.power_w));
    assert_true(isnan(g.power_limit_w));
    assert_true(isnan(g.energy_j));
    assert_int_equal(g.ecc_corrected, -1);
    assert_int_equal(g.ecc_uncorrected, -1);
    assert_int_equal(g.xid_last, -1);
    assert_int_equal(g.ts_ms, 0);
}

static void test_obs_growth(void **state)
{
    struct gi_obs_set s = {0};

    for (int i = 0; i < 1000; i++) {
        struct gi_gpu_obs *g = gi_obs_add_gpu(&s);
        assert_non_null(g);
        assert_int_equal(g->index, -1); /* fresh, absent-initialized */
        assert_true(isnan(g->power_w));
        g->index = i;
        snprintf(g->uuid, sizeof g->uuid, "GPU-%d", i);
    }
    assert_int_equal(s.ngpus, 1000);
    assert_true(s.gpus_cap >= 1000);
    /* Earlier items survive every reallocation. */
    for (int i = 0; i < 1000; i++) {
        char want[32];
        snprintf(want, sizeof want, "GPU-%d", i);
        assert_int_equal(s.gpus[i].index, i);
        assert_string_equal(s.gpus[i].uuid, want);
    }
    for (int i = 0; i < 100; i++) {
        struct gi_proc_obs *p = gi_obs_add_proc(&s);
        assert_non_null(p);
        assert_int_equal(p->pid, -1);
        assert_true(isnan(p->used_mib));
        assert_string_equal(p->name, "");
        p->pid = 1000 + i;
    }
    assert_int_equal(s.nprocs, 100);
    assert_int_equal(s.procs[99].pid, 1099);
    gi_obs_free(&s);
    assert_null(s.gpus);
    assert_null(s.procs);
    assert_int_equal(s.ngpus, 0);
    assert_int_equal(s.nprocs, 0);
    gi_obs_free(&s); /* a zeroed set is fine */
}

static void test_obs_cap(void **state)
{
    struct gi_obs_set s = {0};

    for (size_t i = 0; i < GI_OBS_MAX; i++) {
        struct gi_proc_obs *p = gi_obs_add_proc(&s);
        if (p == NULL)
            fail_msg("add_proc failed at %zu, below the cap", i);
        p->pid = (int64_t)i;
    }
    assert_int_equal(s.nprocs, GI_OBS_MAX);
    assert_null(gi_obs_add_proc(&s));
    assert_null(gi_obs_add_proc(&s));
    assert_int_equal(s.nprocs, GI_OBS_MAX); /* a refused add changes nothing */
    assert_int_equal(s.procs[GI_OBS_MAX - 1].pid, GI_OBS_MAX - 1);
    /* The cap is per array: GPUs can still be added. */
    assert_non_null(gi_obs_add_gpu(&s));
    gi_obs_free(&s);
}

/* Readings outside what a GPU can report are absent; the rest are kept. */
static void test_sanitize(void **state)
{
    struct gi_obs_set set = {0};
    struct gi_gpu_obs g;

    gi_gpu_obs_init(&g);
    g.memory_total_mib = 81559;
    g.memory_used_mib = 81600; /* within rounding of the total */
    g.util_gpu_pct = 100;
    g.util_mem_pct = 0;
    g.temp_c = -10;
    g.power_w = 700;
    g.power_limit_w = 700;
    g.energy_j = 1e9;
    assert_int_equal(gi_gpu_obs_sanitize(&g, &set, "GPU 0"), 0);
    assert_int_equal(set.nwarnings, 0);
    assert_true(g.memory_used_mib == 81600 && g.util_gpu_pct == 100 && g.temp_c == -10);

    g.memory_used_mib = 90000; /* above the total */
    g.util_gpu_pct = 100.5;
    g.util_mem_pct = -1;
    g.temp_c = 4294967295.0;
    g.power_w = 4294967.295;
    g.power_limit_w = -5;
    g.energy_j = -1;
    g.ecc_corrected = -7;
    assert_int_equal(gi_gpu_obs_sanitize(&g, &set, "GPU 3"), 8);
    assert_true(isnan(g.memory_used_mib) && isnan(g.util_gpu_pct) && isnan(g.util_mem_pct));
    assert_true(isnan(g.temp_c) && isnan(g.power_w) && isnan(g.power_limit_w));
    assert_true(isnan(g.energy_j));
    assert_int_equal(g.ecc_corrected, -1);
    assert_true(g.memory_total_mib == 81559);
    assert_int_equal(set.nwarnings, 8);
    assert_string_equal(set.warning,
                        "GPU 3: memory used 90000 is out of range (0 to 82375.6); left absent");

    /* Without a set nothing is counted, the readings still go. */
    g.temp_c = 1000;
    g.memory_total_mib = -1;
    assert_int_equal(gi_gpu_obs_sanitize(&g, NULL, NULL), 2);
    assert_true(isnan(g.temp_c) && isnan(g.memory_total_mib));
    gi_obs_free(&set);
    assert_int_equal(set.nwarnings, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pci_domains),  cmocka_unit_test(test_pci_case_and_spaces),
        cmocka_unit_test(test_pci_garbage),  cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_gpu_obs_init), cmocka_unit_test(test_obs_growth),
        cmocka_unit_test(test_obs_cap),      cmocka_unit_test(test_sanitize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
