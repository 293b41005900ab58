/* nvidia-smi parsers against recorded-style outputs and malformed input. */
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
#include "parse/nvsmi.h"

#define NUM(a, b) assert_float_equal((a), (b), 1e-9)
#define ABSENT(x) assert_true(isnan(x))

static char *fixture(const char *name, size_t *len) { return unit_fixture("nvsmi", name, len); }

typedef int (*xml_like)(const char *, size_t, struct gi_obs_set *, char *, size_t);

/* Parses a fixture with a csv parser (fields may be NULL); asserts OK. */
static void load_csv(int apps, const char *name, const char *fields, struct gi_obs_set *s)
{
    char err[NVSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture(name, &len);
    int rc = apps ? nvsmi_parse_compute_apps(d, len, fields, s, err, sizeof err)
                  : nvsmi_parse_query_gpu(d, len, fields, s, err, sizeof err);
    if (rc != GI_OK)
        fail_msg("%s: %s", name, err);
    free(d);
}

static void load_other(xml_like fn, const char *name, struct gi_obs_set *s)
{
    char err[NVSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture(name, &len);
    if (fn(d, len, s, err, sizeof err) != GI_OK)
        fail_msg("%s: %s", name, err);
    free(d);
}

/* ---- --query-gpu ---- */

static void query_h100x8(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_h100x8.csv", NULL, &s);
    assert_int_equal(s.ngpus, 8);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_int_equal(g->index, 0);
    assert_int_equal(g->vendor, GI_VENDOR_NVIDIA);
    assert_string_equal(g->uuid, "GPU-4f9c1a2e-7b3d-5e60-8a91-0c2d3e4f5a61");
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g->serial, "1652823054567");
    assert_string_equal(g->pci_bus_id, "0000:18:00.0");
    assert_string_equal(g->driver, "550.54.15");
    assert_string_equal(g->vbios, "96.00.74.00.0D");
    NUM(g->memory_total_mib, 81559);
    NUM(g->memory_used_mib, 78213);
    NUM(g->util_gpu_pct, 100);
    NUM(g->util_mem_pct, 41);
    NUM(g->temp_c, 61);
    NUM(g->power_w, 612.45);
    NUM(g->power_limit_w, 700);
    assert_int_equal(g->mig_mode, 0);
    assert_int_equal(g->ecc_corrected, 0);
    assert_int_equal(g->ecc_uncorrected, 0);
    assert_string_equal(g->parent_uuid, "");
    assert_int_equal(g->mig_instance, -1);
    g = &s.gpus[7];
    assert_int_equal(g->index, 7);
    assert_string_equal(g->pci_bus_id, "0000:db:00.0");
    NUM(g->power_w, 68.44);
    assert_int_equal(s.gpus[6].ecc_corrected, 3);
    assert_int_equal(s.nprocs, 0);
    gi_obs_free(&s);
}

static void query_rtx_noheader_nounits_crlf(void **state)
{
    struct gi_obs_set s = {0};
    size_t flen;
    char *fields = fixture("query_gpu_rtx4090_noheader_nounits.fields", &flen);
    fields[strcspn(fields, "\n")] = '\0';
    load_csv(0, "query_gpu_rtx4090_noheader_nounits.csv", fields, &s);
    free(fields);
    assert_int_equal(s.ngpus, 1);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->uuid, "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa");
    assert_string_equal(g->name, "NVIDIA GeForce RTX 4090");
    assert_string_equal(g->serial, ""); /* [N/A] on consumer cards */
    assert_string_equal(g->pci_bus_id, "0000:01:00.0");
    NUM(g->memory_total_mib, 24564);
    NUM(g->memory_used_mib, 2011);
    NUM(g->util_gpu_pct, 7);
    NUM(g->temp_c, 44);
    NUM(g->power_w, 31.52);
    NUM(g->power_limit_w, 450);
    assert_int_equal(g->mig_mode, -1);
    assert_int_equal(g->ecc_corrected, -1);
    assert_int_equal(g->ecc_uncorrected, -1);
    gi_obs_free(&s);
}

static void query_a100_mig(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_a100_mig.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->uuid, "GPU-e91edf3b-b297-37c1-a2a7-7601c7b2e8ce");
    assert_string_equal(g->name, "NVIDIA A100-SXM4-80GB");
    assert_string_equal(g->pci_bus_id, "0000:07:00.0");
    assert_int_equal(g->mig_mode, 1);
    ABSENT(g->util_gpu_pct);
    ABSENT(g->util_mem_pct);
    NUM(g->memory_total_mib, 81920); /* nounits: bare numbers */
    NUM(g->power_limit_w, 400);
    assert_int_equal(g->ecc_corrected, 2); /* aggregate when no volatile */
    assert_int_equal(s.gpus[1].mig_mode, 0);
    NUM(s.gpus[1].util_gpu_pct, 0); /* zero is a value, not absent */
    gi_obs_free(&s);
}

static void query_v13_power_and_placeholders(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_v13_power.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    struct gi_gpu_obs *g = &s.gpus[0];
    NUM(g->power_w, 143.27); /* power.draw [N/A]: average next */
    NUM(g->power_limit_w, 700);
    NUM(g->memory_total_mib, 143771);
    assert_int_equal(g->ts_ms, INT64_C(1762247742108));
    assert_string_equal(g->pci_bus_id, "0000:83:00.0");
    g = &s.gpus[1];
    NUM(g->power_w, 150.02); /* then instant */
    ABSENT(g->power_limit_w);
    ABSENT(g->temp_c);
    ABSENT(g->util_gpu_pct);
    gi_obs_free(&s);
}

static void query_lost_gpu(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_lost.csv", NULL, &s);
    assert_int_equal(s.ngpus, 3);
    assert_string_equal(s.gpus[1].pci_bus_id, "0000:3b:00.0");
    assert_string_equal(s.gpus[1].uuid, "");
    ABSENT(s.gpus[1].memory_total_mib);
    assert_int_equal(s.gpus[2].index, 2);
    gi_obs_free(&s);
}

static void query_no_devices(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_none.csv", NULL, &s);
    assert_int_equal(s.ngpus, 0);
    char err[NVSMI_ERR_LEN];
    assert_int_equal(nvsmi_parse_query_gpu("", 0, NULL, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 0);
    gi_obs_free(&s);
}

static void query_header_forms(void **state)
{
    /* Units in the header, none on the values; odd spacing; 4-digit domain. */
    static const char in[] = "pci.bus_id,memory.total [MiB] ,NAME\n"
                             "0000:0A:00.0,1024,Tesla T4\n";
    char err[NVSMI_ERR_LEN] = "";
    struct gi_obs_set s = {0};
    assert_int_equal(nvsmi_parse_query_gpu(in, sizeof in - 1, NULL, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].pci_bus_id, "0000:0a:00.0");
    NUM(s.gpus[0].memory_total_mib, 1024);
    assert_string_equal(s.gpus[0].name, "Tesla T4");
    gi_obs_free(&s);
}

static void expect_error(int rc, const char *err, int want_rc, const char *want)
{
    assert_int_equal(rc, want_rc);
    if (strstr(err, want) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void query_malformed(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    static const char few[] = "index, uuid, memory.total [MiB]\n0, GPU-x\n";
    static const char many[] = "index, name\n0, NVIDIA, H100\n";
    static const char badnum[] = "index, memory.total [MiB]\n0, 81559 MiB\n1, lots MiB\n";
    static const char badunit[] = "index, power.draw [W]\n0, 12 MiB\n";
    static const char badbus[] = "index, pci.bus_id\n0, 00000000:83:00.0.1.2\n";
    static const char badmig[] = "index, mig.mode.current\n0, Maybe\n";
    static const char hex[] = "index, memory.total\n0, 0x10\n";
    static const char inf[] = "index, memory.total\n0, -inf\n";
    static const char neg[] = "index, memory.total\n0, -5\n";
    static const char nul[] = "index, name\n0, a\0b\n";
    static const char header[] = "GPU 0: x (UUID: y)\n";

    expect_error(nvsmi_parse_query_gpu(few, sizeof few - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "line 2: expected 3 fields, found 2");
    expect_error(nvsmi_parse_query_gpu(many, sizeof many - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "line 2: expected 2 fields, found 3");
    expect_error(nvsmi_parse_query_gpu(nul, sizeof nul - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "line 2: NUL byte");
    expect_error(nvsmi_parse_query_gpu(header, sizeof header - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "line 1: column 1 is not a field name");
    expect_error(nvsmi_parse_query_gpu("x", NVSMI_MAX_INPUT + 1u, NULL, &s, err, sizeof err), err,
                 GI_TOO_LARGE, "larger");
    /* Nothing was appended by any failure, even after good rows. */
    assert_int_equal(s.ngpus, 0);
    /* Nor counted: a failed parse takes its warnings back too. */
    static const char late[] = "index, memory.total\n0, lots\n1\n";
    expect_error(nvsmi_parse_query_gpu(late, sizeof late - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "line 3: expected 2 fields, found 1");
    assert_int_equal(s.nwarnings, 0);
    assert_string_equal(s.warning, "");
    gi_obs_free(&s);

    /* A value that cannot be read is absent, counted, and the GPU kept. */
    static const struct {
        const char *in, *warning;
    } bad[] = {
        {badnum, "line 3: column 2 (memory.total): unreadable value \"lots MiB\""},
        {badunit, "line 2: column 2 (power.draw): unreadable value \"12 MiB\""},
        {badbus, "column 2 (pci.bus_id)"},
        {badmig, "column 2 (mig.mode.current)"},
        {hex, "unreadable value \"0x10\""},
        {inf, "unreadable value \"-inf\""},
        {neg, "unreadable value \"-5\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gi_obs_set d = {0};
        size_t n = strlen(bad[i].in);
        if (nvsmi_parse_query_gpu(bad[i].in, n, NULL, &d, err, sizeof err) != GI_OK)
            fail_msg("case %zu: %s", i, err);
        assert_int_equal(d.nwarnings, 1);
        if (strstr(d.warning, bad[i].warning) == NULL)
            fail_msg("case %zu: warning \"%s\" lacks \"%s\"", i, d.warning, bad[i].warning);
        struct gi_gpu_obs *g = &d.gpus[d.ngpus - 1];
        assert_int_equal(g->index, (int)d.ngpus - 1);
        ABSENT(g->memory_total_mib);
        ABSENT(g->power_w);
        assert_string_equal(g->pci_bus_id, "");
        assert_int_equal(g->mig_mode, -1);
        gi_obs_free(&d);
    }
}

/* Every placeholder formats.md lists, and readings out of range, each in
 * one field: the field is absent, the rest of the GPU is kept. */
static void query_degraded(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(0, "query_gpu_degraded.csv", NULL, &s);
    assert_int_equal(s.ngpus, 4);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->uuid, "GPU-d0000000-0000-4000-8000-000000000000");
    ABSENT(g->temp_c);  /* ERR! */
    ABSENT(g->power_w); /* [Unknown Error] */
    NUM(g->util_gpu_pct, 37);
    NUM(g->memory_used_mib, 1024);
    NUM(g->power_limit_w, 400);
    g = &s.gpus[1];
    assert_string_equal(g->serial, "");     /* [N/A] */
    ABSENT(g->memory_used_mib);             /* [Insufficient Permissions] */
    ABSENT(g->util_gpu_pct);                /* [Not Supported] */
    ABSENT(g->power_limit_w);               /* [Requested functionality has been deprecated] */
    assert_int_equal(g->mig_mode, -1);      /* [N/A] */
    assert_int_equal(g->ecc_corrected, -1); /* N/A */
    NUM(g->temp_c, 41);
    NUM(g->power_w, 88.1);
    g = &s.gpus[2];
    ABSENT(g->util_gpu_pct); /* 150 % */
    ABSENT(g->temp_c);       /* 4294967295 */
    ABSENT(g->power_w);      /* 4294967.29 W */
    NUM(g->util_mem_pct, 7);
    assert_int_equal(g->mig_mode, 1);
    assert_int_equal(g->ecc_corrected, -1); /* [GPU is lost] */
    assert_int_equal(g->ecc_uncorrected, -1);
    g = &s.gpus[3];
    ABSENT(g->memory_total_mib);              /* -5 */
    assert_int_equal(g->mig_mode, -1);        /* Sometimes */
    assert_int_equal(g->ecc_corrected, -1);   /* -2 */
    assert_int_equal(g->ecc_uncorrected, -1); /* 0x10 */
    NUM(g->memory_used_mib, 100);
    NUM(g->temp_c, 33);
    /* Placeholders are not warnings; unreadable and out-of-range values are. */
    assert_int_equal(s.nwarnings, 7);
    gi_obs_free(&s);
}

static void query_long_line(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    size_t n = NVSMI_MAX_LINE + 100;
    char *in = malloc(n + 20);
    memcpy(in, "name\n", 5);
    memset(in + 5, 'a', n);
    expect_error(nvsmi_parse_query_gpu(in, n + 5, NULL, &s, err, sizeof err), err, GI_INVALID,
                 "line 2: longer than");
    free(in);
    gi_obs_free(&s);
}

/* ---- --query-compute-apps ---- */

static void apps_h100(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(1, "apps_h100.csv", NULL, &s);
    assert_int_equal(s.nprocs, 6);
    assert_int_equal(s.ngpus, 0);
    struct gi_proc_obs *p = &s.procs[0];
    assert_string_equal(p->gpu_uuid, "GPU-4f9c1a2e-7b3d-5e60-8a91-0c2d3e4f5a61");
    assert_string_equal(p->pci_bus_id, "0000:18:00.0");
    assert_int_equal(p->pid, 48211);
    assert_string_equal(p->name, "/usr/bin/python3");
    NUM(p->used_mib, 78190);
    assert_string_equal(s.procs[1].name, "python train.py --layers=1,2,3");
    NUM(s.procs[1].used_mib, 78190);
    assert_string_equal(s.procs[2].name, "/opt/conda/bin/python -c \"import torch, time\"");
    assert_string_equal(s.procs[3].name, "/home/jürgen/модель/serve");
    assert_string_equal(s.procs[4].name, "vllm, worker 3");
    assert_int_equal(s.procs[4].pid, 51002);
    assert_string_equal(s.procs[4].pci_bus_id, "0000:ba:00.0");
    NUM(s.procs[5].used_mib, 32);
    gi_obs_free(&s);
}

static void apps_wddm(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(1, "apps_wddm.csv", NULL, &s);
    assert_int_equal(s.nprocs, 2);
    assert_int_equal(s.procs[0].pid, 7412);
    assert_string_equal(s.procs[0].name, "C:\\Program Files\\Mozilla Firefox\\firefox.exe");
    ABSENT(s.procs[0].used_mib);
    assert_string_equal(s.procs[1].name,
                        "C:\\Users\\Ana\\AppData\\Local\\Programs\\Blender Foundation, "
                        "Inc\\blender.exe");
    ABSENT(s.procs[1].used_mib);
    gi_obs_free(&s);
}

static void apps_container(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(1, "apps_container.csv", NULL, &s);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 2291);
    assert_string_equal(s.procs[0].name, "");
    assert_string_equal(s.procs[0].pci_bus_id, "0000:00:1e.0");
    NUM(s.procs[0].used_mib, 14722);
    gi_obs_free(&s);
}

static void apps_empty_and_fields(void **state)
{
    struct gi_obs_set s = {0};
    char err[NVSMI_ERR_LEN];
    load_csv(1, "apps_empty.csv", NULL, &s);
    assert_int_equal(s.nprocs, 0);
    /* noheader with the short aliases; a name with a comma in the middle column */
    static const char in[] = "12, a,b, 10 MiB, GPU-1\n13, ?, [N/A], GPU-2\n";
    assert_int_equal(nvsmi_parse_compute_apps(in, sizeof in - 1, "pid,name,used_memory,gpu_uuid",
                                              &s, err, sizeof err),
                     GI_OK);
    assert_int_equal(s.nprocs, 2);
    assert_string_equal(s.procs[0].name, "a,b");
    NUM(s.procs[0].used_mib, 10);
    assert_string_equal(s.procs[0].gpu_uuid, "GPU-1");
    assert_string_equal(s.procs[1].name, "?");
    ABSENT(s.procs[1].used_mib);
    gi_obs_free(&s);
}

static void apps_malformed(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    static const char badpid[] = "pid, process_name\nabc, x\n";
    static const char badts[] = "timestamp, pid\n2024-01-01 00:00:00, 5\n";
    static const char few[] = "pid, process_name, used_gpu_memory [MiB]\n5\n";
    static const char bytes[] = "pid, process_name\n5, ab\xff\x01"
                                "c\n";

    /* An unreadable pid makes the process anonymous; a bad time, absent. */
    assert_int_equal(nvsmi_parse_compute_apps(badpid, sizeof badpid - 1, NULL, &s, err, sizeof err),
                     GI_OK);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, -1);
    assert_string_equal(s.procs[0].name, "x");
    assert_non_null(strstr(s.warning, "line 2: column 1 (pid)"));
    assert_int_equal(nvsmi_parse_compute_apps(badts, sizeof badts - 1, NULL, &s, err, sizeof err),
                     GI_OK);
    assert_int_equal(s.procs[1].pid, 5);
    assert_int_equal(s.procs[1].ts_ms, 0);
    assert_int_equal(s.nwarnings, 2);
    gi_obs_free(&s);
    expect_error(nvsmi_parse_compute_apps(few, sizeof few - 1, NULL, &s, err, sizeof err), err,
                 GI_INVALID, "expected 3 fields, found 1");
    /* Bytes that are not text are replaced, not refused. */
    assert_int_equal(nvsmi_parse_compute_apps(bytes, sizeof bytes - 1, NULL, &s, err, sizeof err),
                     GI_OK);
    assert_string_equal(s.procs[0].name, "ab??c");
    gi_obs_free(&s);
}

/* Run without privileges: other users' processes have their pid and name
 * hidden; they are kept as anonymous processes with their memory. */
static void apps_unprivileged(void **state)
{
    struct gi_obs_set s = {0};
    load_csv(1, "apps_unprivileged.csv", NULL, &s);
    assert_int_equal(s.nprocs, 5); /* the row of placeholders only is skipped */
    assert_int_equal(s.procs[0].pid, 4242);
    assert_int_equal(s.procs[1].pid, -1);
    assert_string_equal(s.procs[1].name, "");
    assert_string_equal(s.procs[1].gpu_uuid, "GPU-d0000000-0000-4000-8000-000000000000");
    NUM(s.procs[1].used_mib, 8192);
    assert_int_equal(s.procs[2].pid, -1);
    NUM(s.procs[2].used_mib, 4096);
    assert_int_equal(s.procs[3].pid, -1);
    ABSENT(s.procs[3].used_mib);
    assert_string_equal(s.procs[3].gpu_uuid, "GPU-d0000000-0000-4000-8000-000000000001");
    /* No uuid: the bus id still says which GPU. */
    assert_string_equal(s.procs[4].gpu_uuid, "");
    assert_string_equal(s.procs[4].pci_bus_id, "0000:47:00.0");
    assert_int_equal(s.nwarnings, 0); /* hidden is not unreadable */
    gi_obs_free(&s);
}

/* The XML report with the placeholders and broken readings of one GPU. */
static void xml_degraded(void **state)
{
    static const char doc[] =
        "<nvidia_smi_log><driver_version>550.54.15</driver_version><gpu id=\"00000000:07:00.0\">"
        "<product_name>NVIDIA A100-SXM4-80GB</product_name><serial>N/A</serial>"
        "<uuid>GPU-d0000000-0000-4000-8000-000000000000</uuid>"
        "<fb_memory_usage><total>81920 MiB</total><used>[Insufficient Permissions]</used>"
        "</fb_memory_usage><utilization><gpu_util>250 %</gpu_util><memory_util>ERR!</memory_util>"
        "</utilization><temperature><gpu_temp>4294967295 C</gpu_temp></temperature>"
        "<gpu_power_readings><power_draw>[Unknown Error]</power_draw>"
        "<current_power_limit>400.00 W</current_power_limit></gpu_power_readings>"
        "<processes><process_info><pid>0</pid><used_memory>1024 MiB</used_memory>"
        "<process_name>[Insufficient Permissions]</process_name></process_info>"
        "<process_info><pid>[Insufficient Permissions]</pid><used_memory>512 MiB</used_memory>"
        "</process_info></processes></gpu></nvidia_smi_log>";
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};

    assert_int_equal(nvsmi_parse_xml(doc, sizeof doc - 1, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 1);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->serial, "");
    NUM(g->memory_total_mib, 81920);
    ABSENT(g->memory_used_mib);
    ABSENT(g->util_gpu_pct);
    ABSENT(g->util_mem_pct);
    ABSENT(g->temp_c);
    ABSENT(g->power_w);
    NUM(g->power_limit_w, 400);
    assert_int_equal(s.nwarnings, 2); /* 250 % and 4294967295 C */
    assert_int_equal(s.nprocs, 2);
    assert_int_equal(s.procs[0].pid, -1);
    assert_string_equal(s.procs[0].name, "");
    NUM(s.procs[0].used_mib, 1024);
    assert_int_equal(s.procs[1].pid, -1);
    NUM(s.procs[1].used_mib, 512);
    gi_obs_free(&s);
}

static void time_parse(void **state)
{
    int64_t ms;
    assert_int_equal(nvsmi_parse_time("2026/07/03 22:22:27.377", &ms), GI_OK);
    assert_int_equal(ms, INT64_C(1783117347377));
    assert_int_equal(nvsmi_parse_time("2026/07/03 22:22:27", &ms), GI_OK);
    assert_int_equal(ms, INT64_C(1783117347000));
    assert_int_equal(nvsmi_parse_time("2026/07/03 22:22:27.5", &ms), GI_OK);
    assert_int_equal(ms, INT64_C(1783117347500));
    assert_int_equal(nvsmi_parse_time("2026/13/03 22:22:27", &ms), GI_INVALID);
    assert_int_equal(nvsmi_parse_time("2026/07/03 22:22:27.", &ms), GI_INVALID);
    assert_int_equal(nvsmi_parse_time("2026/07/03", &ms), GI_INVALID);
    assert_int_equal(nvsmi_parse_time("", &ms), GI_INVALID);
}

/* ---- -q -x ---- */

static void xml_470(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_xml, "xml_470_v100.xml", &s);
    assert_int_equal(s.ngpus, 1);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_int_equal(g->index, 0);
    assert_string_equal(g->name, "Tesla V100-PCIE-32GB");
    assert_string_equal(g->serial, "0323218067341");
    assert_string_equal(g->uuid, "GPU-1d0e2a6b-9c3f-4b1e-8a27-5f6d4c3b2a19");
    assert_string_equal(g->pci_bus_id, "0000:3b:00.0");
    assert_string_equal(g->driver, "470.103.01");
    assert_string_equal(g->vbios, "88.00.80.00.01");
    NUM(g->memory_total_mib, 32510);
    NUM(g->memory_used_mib, 30214);
    NUM(g->util_gpu_pct, 87);
    NUM(g->util_mem_pct, 55);
    NUM(g->temp_c, 67);
    NUM(g->power_w, 213.56);
    NUM(g->power_limit_w, 250);
    assert_int_equal(g->ecc_corrected, 4);
    assert_int_equal(g->ecc_uncorrected, 0);
    assert_int_equal(g->mig_mode, -1);
    assert_int_equal(g->ts_ms, INT64_C(1644316877000));
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 23817);
    assert_string_equal(s.procs[0].name, "/usr/bin/python3");
    assert_string_equal(s.procs[0].gpu_uuid, g->uuid);
    assert_string_equal(s.procs[0].pci_bus_id, "0000:3b:00.0");
    NUM(s.procs[0].used_mib, 30210);
    gi_obs_free(&s);
}

static void xml_535_mig(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_xml, "xml_535_a100_mig.xml", &s);
    assert_int_equal(s.ngpus, 3);
    struct gi_gpu_obs *g = &s.gpus[0];
    assert_string_equal(g->uuid, "GPU-e91edf3b-b297-37c1-a2a7-7601c7b2e8ce");
    assert_int_equal(g->mig_mode, 1);
    ABSENT(g->util_gpu_pct);
    NUM(g->power_w, 61.77);
    NUM(g->power_limit_w, 400); /* current_power_limit */
    NUM(g->memory_total_mib, 81920);
    assert_int_equal(g->ecc_corrected, 2); /* volatile all N/A: aggregate */
    assert_int_equal(g->ecc_uncorrected, 0);
    struct gi_gpu_obs *m = &s.gpus[1];
    assert_string_equal(m->parent_uuid, "GPU-e91edf3b-b297-37c1-a2a7-7601c7b2e8ce");
    assert_string_equal(m->uuid, "");
    assert_int_equal(m->index, 0);
    assert_int_equal(m->mig_instance, 2);
    assert_int_equal(m->mig_mode, 1);
    NUM(m->memory_total_mib, 40192);
    NUM(m->memory_used_mib, 25);
    assert_string_equal(m->pci_bus_id, "");
    m = &s.gpus[2];
    assert_int_equal(m->index, 1);
    assert_int_equal(m->mig_instance, 9);
    NUM(m->memory_total_mib, 9728);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 91344);
    assert_string_equal(s.procs[0].name, "tritonserver");
    gi_obs_free(&s);
}

static void xml_570(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_xml, "xml_570_h100.xml", &s);
    /* attached_gpus says 8; two <gpu> elements are what count. */
    assert_int_equal(s.ngpus, 2);
    struct gi_gpu_obs *g = &s.gpus[0];
    NUM(g->power_w, 598.31); /* average_power_draw */
    NUM(g->power_limit_w, 700);
    assert_int_equal(g->ecc_corrected, 6);
    assert_int_equal(g->ecc_uncorrected, 0);
    assert_int_equal(g->mig_mode, 0);
    NUM(g->temp_c, 61);
    g = &s.gpus[1];
    assert_int_equal(g->index, 1);
    assert_string_equal(g->pci_bus_id, "0000:2a:00.0"); /* from the id attribute */
    NUM(g->power_w, 69.85);                             /* instant when average is N/A */
    assert_int_equal(g->ecc_corrected, -1);
    assert_int_equal(s.nprocs, 2);
    assert_string_equal(s.procs[0].name, "/home/jürgen/модель/serve --a=1,2 & \"x\"");
    ABSENT(s.procs[1].used_mib);
    assert_int_equal(s.procs[1].pid, 1201);
    gi_obs_free(&s);
}

static void xml_malformed(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    static const char trunc[] = "<nvidia_smi_log><gpu id=\"0000:01:00.0\">";
    static const char root[] = "<foo/>";
    static const char badnum[] = "<nvidia_smi_log><gpu><fb_memory_usage><total>lots</total>"
                                 "</fb_memory_usage></gpu></nvidia_smi_log>";
    static const char second[] = "<nvidia_smi_log><gpu><uuid>GPU-a</uuid></gpu>"
                                 "<gpu><temperature><gpu_temp>hot</gpu_temp></temperature></gpu>"
                                 "</nvidia_smi_log>";
    static const char ent[] =
        "<?xml version=\"1.0\"?><!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM \"file:///etc/passwd\">"
        "<!ENTITY y \"GPU-y\">]><nvidia_smi_log><gpu><uuid>&x;&y;</uuid><serial>&y;</serial>"
        "</gpu></nvidia_smi_log>";
    static const char badbus[] = "<nvidia_smi_log><gpu id=\"zz\"></gpu></nvidia_smi_log>";
    static const char badmig[] = "<nvidia_smi_log><gpu><mig_mode><current_mig>Sometimes"
                                 "</current_mig></mig_mode></gpu></nvidia_smi_log>";

    expect_error(nvsmi_parse_xml(trunc, sizeof trunc - 1, &s, err, sizeof err), err, GI_INVALID,
                 "line 1: XML:");
    expect_error(nvsmi_parse_xml(root, sizeof root - 1, &s, err, sizeof err), err, GI_INVALID,
                 "root element is <foo>");
    expect_error(nvsmi_parse_xml("", 0, &s, err, sizeof err), err, GI_INVALID, "XML");
    assert_int_equal(s.ngpus, 0);
    assert_int_equal(s.nprocs, 0);
    /* Unreadable values are absent and counted; every GPU is kept. */
    static const struct {
        const char *in, *warning;
        size_t ngpus;
    } bad[] = {
        {badnum, "gpu 0: <fb_memory_usage/total>: unreadable value \"lots\"", 1},
        {second, "gpu 1: <temperature/gpu_temp>: unreadable value \"hot\"", 2},
        {badbus, "gpu 0: bad PCI bus id \"zz\"", 1},
        {badmig, "gpu 0: <mig_mode/current_mig>: unreadable value \"Sometimes\"", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gi_obs_set d = {0};
        if (nvsmi_parse_xml(bad[i].in, strlen(bad[i].in), &d, err, sizeof err) != GI_OK)
            fail_msg("case %zu: %s", i, err);
        assert_int_equal(d.ngpus, bad[i].ngpus);
        assert_int_equal(d.nwarnings, 1);
        if (strstr(d.warning, bad[i].warning) == NULL)
            fail_msg("case %zu: warning \"%s\" lacks \"%s\"", i, d.warning, bad[i].warning);
        ABSENT(d.gpus[d.ngpus - 1].memory_total_mib);
        ABSENT(d.gpus[d.ngpus - 1].temp_c);
        assert_string_equal(d.gpus[d.ngpus - 1].pci_bus_id, "");
        assert_int_equal(d.gpus[d.ngpus - 1].mig_mode, -1);
        gi_obs_free(&d);
    }
    /* Entities are never expanded: no file is read, no text is injected. */
    assert_int_equal(nvsmi_parse_xml(ent, sizeof ent - 1, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].uuid, "");
    assert_string_equal(s.gpus[0].serial, "");
    gi_obs_free(&s);
}

static void xml_bounded(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    char *doc = malloc(64 * 1024);
    size_t n = 0;

    /* Exponential entity expansion is refused by the parser. */
    n += (size_t)snprintf(doc + n, 64 * 1024 - n,
                          "<?xml version=\"1.0\"?><!DOCTYPE nvidia_smi_log [<!ENTITY a0 \"lol\">");
    for (int i = 1; i < 10; i++) {
        n += (size_t)snprintf(doc + n, 64 * 1024 - n, "<!ENTITY a%d \"", i);
        for (int k = 0; k < 10; k++)
            n += (size_t)snprintf(doc + n, 64 * 1024 - n, "&a%d;", i - 1);
        n += (size_t)snprintf(doc + n, 64 * 1024 - n, "\">");
    }
    n += (size_t)snprintf(doc + n, 64 * 1024 - n,
                          "]><nvidia_smi_log><gpu><uuid>&a9;</uuid></gpu></nvidia_smi_log>");
    expect_error(nvsmi_parse_xml(doc, n, &s, err, sizeof err), err, GI_INVALID, "XML:");
    /* Nesting deeper than libxml2's limit is refused. */
    n = 0;
    n += (size_t)snprintf(doc + n, 64 * 1024 - n, "<nvidia_smi_log>");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(doc + n, 64 * 1024 - n, "<a>");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(doc + n, 64 * 1024 - n, "</a>");
    n += (size_t)snprintf(doc + n, 64 * 1024 - n, "</nvidia_smi_log>");
    expect_error(nvsmi_parse_xml(doc, n, &s, err, sizeof err), err, GI_INVALID, "depth");
    assert_int_equal(s.ngpus, 0);
    free(doc);
    gi_obs_free(&s);
}

/* ---- -L ---- */

static void list_plain(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_list, "list_h100.txt", &s);
    assert_int_equal(s.ngpus, 2);
    assert_int_equal(s.gpus[1].index, 1);
    assert_string_equal(s.gpus[1].name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(s.gpus[1].uuid, "GPU-9b2e7c41-1d5a-4f3e-b6c7-28a9e0f1d2c3");
    assert_int_equal(s.gpus[1].mig_mode, -1);
    gi_obs_free(&s);
}

static void list_mig(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_list, "list_a100_mig.txt", &s);
    assert_int_equal(s.ngpus, 6);
    assert_int_equal(s.gpus[0].mig_mode, 1);
    struct gi_gpu_obs *m = &s.gpus[1];
    assert_string_equal(m->uuid, "MIG-c2f2f3c5-8d3a-5b7e-9d5b-ad0b4ad7a0e1");
    assert_string_equal(m->parent_uuid, "GPU-e91edf3b-b297-37c1-a2a7-7601c7b2e8ce");
    assert_string_equal(m->mig_profile, "3g.40gb");
    assert_int_equal(m->index, 0);
    assert_int_equal(m->mig_instance, -1);
    assert_string_equal(s.gpus[4].mig_profile, "1c.3g.40gb");
    assert_int_equal(s.gpus[4].index, 3);
    assert_int_equal(s.gpus[5].index, 1);
    assert_int_equal(s.gpus[5].mig_mode, -1);
    assert_string_equal(s.gpus[5].parent_uuid, "");
    gi_obs_free(&s);
}

static void list_mig_old(void **state)
{
    struct gi_obs_set s = {0};
    load_other(nvsmi_parse_list, "list_mig_old.txt", &s);
    assert_int_equal(s.ngpus, 3);
    assert_string_equal(s.gpus[2].uuid, "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/2/0");
    assert_string_equal(s.gpus[2].parent_uuid, "GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f");
    assert_int_equal(s.gpus[1].mig_instance, 1);
    assert_int_equal(s.gpus[2].mig_instance, 2);
    assert_string_equal(s.gpus[2].mig_profile, "3g.20gb");
    gi_obs_free(&s);
}

static void list_malformed(void **state)
{
    char err[NVSMI_ERR_LEN];
    struct gi_obs_set s = {0};
    static const char orphan[] = "  MIG 1g.5gb Device 0: (UUID: MIG-x)\n";
    static const char junk[] = "GPU 0: A (UUID: GPU-a)\nNVIDIA-SMI has failed because it "
                               "couldn't communicate with the NVIDIA driver.\n";
    static const char num[] = "GPU x: A (UUID: GPU-a)\n";
    static const char dev[] = "GPU 0: A (UUID: GPU-a)\n  MIG 1g.5gb Thing 0: (UUID: MIG-x)\n";

    expect_error(nvsmi_parse_list(orphan, sizeof orphan - 1, &s, err, sizeof err), err, GI_INVALID,
                 "line 1: MIG device before any GPU");
    expect_error(nvsmi_parse_list(junk, sizeof junk - 1, &s, err, sizeof err), err, GI_INVALID,
                 "line 2: not a GPU or MIG line");
    expect_error(nvsmi_parse_list(num, sizeof num - 1, &s, err, sizeof err), err, GI_INVALID,
                 "bad GPU number");
    expect_error(nvsmi_parse_list(dev, sizeof dev - 1, &s, err, sizeof err), err, GI_INVALID,
                 "line 2: expected \"Device N:\"");
    assert_int_equal(s.ngpus, 0);
    assert_int_equal(nvsmi_parse_list("No devices found.\n", 18, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 0);
    gi_obs_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_h100x8),
        cmocka_unit_test(query_rtx_noheader_nounits_crlf),
        cmocka_unit_test(query_a100_mig),
        cmocka_unit_test(query_v13_power_and_placeholders),
        cmocka_unit_test(query_lost_gpu),
        cmocka_unit_test(query_no_devices),
        cmocka_unit_test(query_header_forms),
        cmocka_unit_test(query_malformed),
        cmocka_unit_test(query_degraded),
        cmocka_unit_test(apps_unprivileged),
        cmocka_unit_test(xml_degraded),
        cmocka_unit_test(query_long_line),
        cmocka_unit_test(apps_h100),
        cmocka_unit_test(apps_wddm),
        cmocka_unit_test(apps_container),
        cmocka_unit_test(apps_empty_and_fields),
        cmocka_unit_test(apps_malformed),
        cmocka_unit_test(time_parse),
        cmocka_unit_test(xml_470),
        cmocka_unit_test(xml_535_mig),
        cmocka_unit_test(xml_570),
        cmocka_unit_test(xml_malformed),
        cmocka_unit_test(xml_bounded),
        cmocka_unit_test(list_plain),
        cmocka_unit_test(list_mig),
        cmocka_unit_test(list_mig_old),
        cmocka_unit_test(list_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
