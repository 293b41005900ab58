/* rocm-smi / amd-smi parsers against recorded-style outputs and malformed input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/amdsmi.h"

#define NUM(a, b) assert_float_equal((a), (b), 1e-9)
#define ABSENT(x) assert_true(isnan(x))

static char *fixture(const char *name, size_t *len) { return unit_fixture("amd", name, len); }

static void expect_error(int rc, const char *err, int want_rc, const char *want)
{
    assert_int_equal(rc, want_rc);
    if (strstr(err, want) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void rocm_mi300x(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture("rocm_smi_mi300x.json", &len);

    if (amdsmi_parse_rocm(d, len, &s, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(d);
    assert_int_equal(s.ngpus, 2);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_int_equal(g->vendor, GI_VENDOR_AMD);
    assert_int_equal(g->index, 0);
    assert_string_equal(g->name, "AMD Instinct MI300X OAM");
    assert_string_equal(g->serial, "692251001124");
    assert_string_equal(g->uuid, "0x18a5e2b3c4d5e6f7");
    assert_string_equal(g->pci_bus_id, "0000:0c:00.0");
    assert_string_equal(g->vbios, "113-M3000100-102");
    assert_string_equal(g->driver, "6.7.0"); /* from "system" */
    NUM(g->temp_c, 42);                      /* edge N/A: junction */
    NUM(g->power_w, 139);
    NUM(g->power_limit_w, 750);
    NUM(g->util_gpu_pct, 3);
    NUM(g->util_mem_pct, 0);
    NUM(g->memory_total_mib, 205822885888.0 / 1048576.0);
    NUM(g->memory_used_mib, 296857600.0 / 1048576.0);
    assert_int_equal(g->mig_mode, -1);
    assert_int_equal(g->ecc_corrected, -1);
    g = &s.gpus[1];
    assert_int_equal(g->index, 1);
    NUM(g->util_gpu_pct, 100);
    NUM(g->util_mem_pct, 37);
    NUM(g->power_w, 612);
    gi_obs_free(&s);
}

static void rocm_consumer_with_warning(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture("rocm_smi_rx7900.json", &len);

    if (amdsmi_parse_rocm(d, len, &s, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(d);
    assert_int_equal(s.ngpus, 1);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_int_equal(g->index, 1);
    assert_string_equal(g->serial, ""); /* "N/A" */
    assert_string_equal(g->uuid, "");
    assert_string_equal(g->name, "Navi 31 [Radeon RX 7900 XT/7900 XTX]"); /* "Card series" */
    assert_string_equal(g->driver, "6.8.0-45-generic");
    NUM(g->temp_c, 38);
    NUM(g->power_w, 12); /* average when no current socket power */
    NUM(g->power_limit_w, 327);
    ABSENT(g->util_mem_pct);
    gi_obs_free(&s);
}

static void amdsmi_pair(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    size_t sl, ml;
    char *st = fixture("amdsmi_static_mi300x.json", &sl);
    char *me = fixture("amdsmi_metric_mi300x.json", &ml);

    if (amdsmi_parse(st, sl, me, ml, &s, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(st);
    free(me);
    assert_int_equal(s.ngpus, 2);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_int_equal(g->vendor, GI_VENDOR_AMD);
    assert_int_equal(g->index, 0);
    assert_string_equal(g->name, "AMD Instinct MI300X");
    assert_string_equal(g->serial, "692251001124");
    assert_string_equal(g->uuid, "0x18a5e2b3c4d5e6f7"); /* same as rocm-smi's Unique ID */
    assert_string_equal(g->pci_bus_id, "0000:0c:00.0");
    assert_string_equal(g->driver, "6.7.0");
    assert_string_equal(g->vbios, "022.040.003.043.000001");
    NUM(g->memory_total_mib, 196592);
    NUM(g->memory_used_mib, 283);
    NUM(g->power_limit_w, 750);
    NUM(g->power_w, 139);
    NUM(g->util_gpu_pct, 3);
    NUM(g->temp_c, 42);
    assert_int_equal(g->ecc_corrected, 0);
    ABSENT(g->energy_j);
    g = &s.gpus[1]; /* metric lists gpu 1 first: merged by index */
    assert_int_equal(g->index, 1);
    assert_string_equal(g->uuid, "0x2b7c9d0e1f203142");
    assert_string_equal(g->pci_bus_id, "0000:22:00.0");
    NUM(g->util_gpu_pct, 100);
    NUM(g->util_mem_pct, 37);
    NUM(g->power_w, 612);
    NUM(g->temp_c, 44);
    NUM(g->memory_used_mib, 184320);
    NUM(g->energy_j, 92.8374615);
    assert_int_equal(g->ecc_corrected, 2);
    assert_int_equal(g->ecc_uncorrected, 0);
    gi_obs_free(&s);
}

static void amdsmi_old_strings(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    size_t sl, ml;
    char *st = fixture("amdsmi_static_old.json", &sl);
    char *me = fixture("amdsmi_metric_old.json", &ml);

    if (amdsmi_parse(st, sl, me, ml, &s, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(st);
    free(me);
    assert_int_equal(s.ngpus, 1);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->name, "AMD Instinct MI210");
    assert_string_equal(g->serial, "");
    assert_string_equal(g->vbios, "113-D67301-063");
    NUM(g->memory_total_mib, 65520);
    NUM(g->memory_used_mib, 4096);
    NUM(g->util_gpu_pct, 12);
    NUM(g->util_mem_pct, 4);
    NUM(g->power_w, 88);
    NUM(g->temp_c, 45); /* "45 °C" */
    assert_int_equal(g->ecc_uncorrected, 0);
    gi_obs_free(&s);
}

static void amdsmi_one_side(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    static const char metric[] = "[{\"gpu\": 3, \"usage\": {\"gfx_activity\": 50}}]";

    assert_int_equal(amdsmi_parse(NULL, 0, metric, sizeof metric - 1, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 1);
    assert_int_equal(s.gpus[0].index, 3);
    assert_int_equal(s.gpus[0].vendor, GI_VENDOR_AMD);
    NUM(s.gpus[0].util_gpu_pct, 50);
    assert_int_equal(amdsmi_parse("[]", 2, NULL, 0, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 1);
    gi_obs_free(&s);
}

static void amd_malformed(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN];
    static const char nojson[] = "WARNING: no GPUs\n";
    static const char broken[] = "note\n[{\"gpu\": 0,\n \"asic\": }]";
    static const char shape[] = "{\"gpus\": []}";
    static const char notobj[] = "[1]";
    static const char badidx[] = "[{\"gpu\": \"zero\"}]";
    static const char badnum[] = "[{\"gpu\": 0, \"usage\": {\"gfx_activity\": \"busy\"}}]";
    static const char badunit[] = "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": "
                                  "{\"value\": 5, \"unit\": \"W\"}}}]";
    static const char badbus[] = "[{\"gpu\": 0, \"bus\": {\"bdf\": \"0000:zz:00.0\"}}]";
    static const char rocmkey[] = "{\"cardX\": {}}";
    static const char rocmval[] = "{\"card0\": {\"GPU use (%)\": \"lots\"}}";
    static const char rocmarr[] = "[]";
    static const char good[] = "[{\"gpu\": 0}]";

    expect_error(amdsmi_parse(nojson, sizeof nojson - 1, NULL, 0, &s, err, sizeof err), err,
                 GI_INVALID, "static: no JSON object or array found");
    expect_error(amdsmi_parse(broken, sizeof broken - 1, NULL, 0, &s, err, sizeof err), err,
                 GI_INVALID, "static: line 3: JSON:");
    expect_error(amdsmi_parse(shape, sizeof shape - 1, NULL, 0, &s, err, sizeof err), err,
                 GI_INVALID, "expected an array");
    expect_error(amdsmi_parse(notobj, sizeof notobj - 1, NULL, 0, &s, err, sizeof err), err,
                 GI_INVALID, "static entry 0: not an object");
    expect_error(amdsmi_parse(badidx, sizeof badidx - 1, NULL, 0, &s, err, sizeof err), err,
                 GI_INVALID, "\"gpu\" is not an index");
    expect_error(amdsmi_parse_rocm(rocmkey, sizeof rocmkey - 1, &s, err, sizeof err), err,
                 GI_INVALID, "bad card key");
    expect_error(amdsmi_parse_rocm(rocmarr, sizeof rocmarr - 1, &s, err, sizeof err), err,
                 GI_INVALID, "expected an object of cards");
    expect_error(amdsmi_parse_rocm("{", AMDSMI_MAX_INPUT + 1u, &s, err, sizeof err), err,
                 GI_TOO_LARGE, "larger");
    /* A failure after a good static leaves nothing behind. */
    assert_int_equal(s.ngpus, 0);
    gi_obs_free(&s);

    /* A value that cannot be read is absent and counted; the GPU is kept. */
    static const struct {
        const char *st, *mt, *rocm, *warning;
    } bad[] = {
        {good, badnum, NULL, "metric entry 0: \"usage.gfx_activity\": not a number"},
        {NULL, badunit, NULL, "\"mem_usage.total_vram\": not a number"},
        {badbus, NULL, NULL, "\"bus.bdf\": not a PCI bus id"},
        {NULL, NULL, rocmval, "card0: \"GPU use (%)\": not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gi_obs_set d = {0};
        int rc = bad[i].rocm
                     ? amdsmi_parse_rocm(bad[i].rocm, strlen(bad[i].rocm), &d, err, sizeof err)
                     : amdsmi_parse(bad[i].st, bad[i].st ? strlen(bad[i].st) : 0, bad[i].mt,
                                    bad[i].mt ? strlen(bad[i].mt) : 0, &d, err, sizeof err);
        if (rc != GI_OK)
            fail_msg("case %zu: %s", i, err);
        assert_int_equal(d.ngpus, 1);
        assert_int_equal(d.nwarnings, 1);
        if (strstr(d.warning, bad[i].warning) == NULL)
            fail_msg("case %zu: warning \"%s\" lacks \"%s\"", i, d.warning, bad[i].warning);
        ABSENT(d.gpus[0].util_gpu_pct);
        ABSENT(d.gpus[0].memory_total_mib);
        assert_string_equal(d.gpus[0].pci_bus_id, "");
        gi_obs_free(&d);
    }
}

/* amd-smi metric output with placeholders, unreadable and out-of-range
 * values: each is absent, every GPU and every other reading kept. */
static void amdsmi_degraded(void **state)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN] = "";
    size_t sl, ml;
    char *st = fixture("amdsmi_static_mi300x.json", &sl);
    char *mt = fixture("amdsmi_metric_degraded.json", &ml);

    if (amdsmi_parse(st, sl, mt, ml, &s, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(st);
    free(mt);
    assert_int_equal(s.ngpus, 2);
    const struct gi_gpu_obs *g = s.gpus[0].index == 0 ? &s.gpus[0] : &s.gpus[1];
    assert_string_not_equal(g->uuid, "");
    ABSENT(g->util_gpu_pct);    /* 250 % */
    ABSENT(g->util_mem_pct);    /* {"value": "N/A"} */
    ABSENT(g->power_w);         /* "N/A", then "ERR!" */
    ABSENT(g->temp_c);          /* 65535 C */
    ABSENT(g->memory_used_mib); /* -1 MB */
    ABSENT(g->energy_j);        /* "busy" */
    NUM(g->memory_total_mib, 196592);
    assert_int_equal(g->ecc_corrected, -1);
    assert_int_equal(g->ecc_uncorrected, 0);
    g = s.gpus[0].index == 1 ? &s.gpus[0] : &s.gpus[1];
    NUM(g->util_gpu_pct, 12);
    NUM(g->temp_c, 51);
    NUM(g->power_w, 300);
    /* -1 MB, "busy", 250 %, 65535 C; placeholders are not warnings. */
    assert_int_equal(s.nwarnings, 4);
    gi_obs_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rocm_mi300x),     cmocka_unit_test(rocm_consumer_with_warning),
        cmocka_unit_test(amdsmi_pair),     cmocka_unit_test(amdsmi_old_strings),
        cmocka_unit_test(amdsmi_one_side), cmocka_unit_test(amd_malformed),
        cmocka_unit_test(amdsmi_degraded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
