/* hl-smi parsers against recorded outputs of Gaudi, Gaudi2 and Gaudi3 and
 * the edge cases of the formats reference (header units, value units,
 * N/A, odd spacing, index order, loop mode, table layouts, hidden pids,
 * impossible readings). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit.h"

#include "collect/accelfd.h"
#include "core/status.h"
#include "parse/hlsmi.h"

#define NUM(a, b) assert_float_equal((a), (b), 1e-9)
#define ABSENT(x) assert_true(isnan(x))

static char *fixture(const char *name, size_t *len) { return unit_fixture("gaudi", name, len); }

static void parse_ok(const char *name, const char *fields, struct gi_obs_set *s)
{
    char err[HLSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture(name, &len);
    int rc = hlsmi_parse_query(d, len, fields, s, err, sizeof err);

    free(d);
    if (rc != GI_OK)
        fail_msg("%s: %s", name, err);
}

static const struct gi_gpu_obs *by_bus(const struct gi_obs_set *s, const char *bus)
{
    for (size_t i = 0; i < s->ngpus; i++)
        if (strcmp(s->gpus[i].pci_bus_id, bus) == 0)
            return &s->gpus[i];
    fail_msg("no GPU at %s", bus);
    return NULL;
}

/* Gaudi2, units in header and values; index is not module_id. */
static void gaudi2_units(void **state)
{
    struct gi_obs_set s = {0};
    const struct gi_gpu_obs *g;

    (void)state;
    parse_ok("gaudi2_units.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    assert_int_equal(s.nwarnings, 0);
    g = &s.gpus[0];
    assert_int_equal(g->vendor, GI_VENDOR_INTEL);
    assert_int_equal(g->index, 0); /* module_id 3 is not the index */
    assert_string_equal(g->uuid, "01P0-HL2080A0-15-TG1C07-05-01-04");
    assert_string_equal(g->serial, "AM50017402");
    assert_string_equal(g->name, "Intel Gaudi2 HL-225");
    assert_string_equal(g->pci_bus_id, "0000:19:00.0");
    assert_string_equal(g->driver, "1.17.0-28a11ca");
    NUM(g->memory_total_mib, 98304);
    NUM(g->memory_used_mib, 768); /* idle baseline, not 0 */
    NUM(g->util_gpu_pct, 0);
    NUM(g->temp_c, 27);
    NUM(g->power_w, 88);
    g = &s.gpus[1];
    assert_int_equal(g->index, 1);
    NUM(g->memory_used_mib, 81152);
    NUM(g->util_gpu_pct, 96);
    NUM(g->power_w, 431);
    gi_obs_free(&s);
}

/* Gaudi3, noheader + nounits, columns from the -Q list; used from free. */
static void gaudi3_noheader(void **state)
{
    struct gi_obs_set s = {0};
    const struct gi_gpu_obs *g;

    (void)state;
    parse_ok("gaudi3_noheader_nounits.csv",
             "index,name,uuid,bus_id,memory.total,memory.used,memory.free,utilization.aip,"
             "temperature.aip,power.draw",
             &s);
    assert_int_equal(s.ngpus, 2);
    g = by_bus(&s, "0000:9b:00.0");
    assert_string_equal(g->name, "Intel Gaudi3 HL-325L");
    assert_string_equal(g->uuid, "01P4-HL3090A0-18-UBX204-02-08-01");
    NUM(g->memory_total_mib, 131072);
    NUM(g->memory_used_mib, 119808);
    NUM(g->util_gpu_pct, 100);
    NUM(g->temp_c, 58);
    NUM(g->power_w, 712);
    assert_string_equal(g->serial, "");
    /* Fields given, but the output has its header after all: not a GPU. */
    parse_ok("gaudi1_nounits.csv",
             "index,name,serial,uuid,bus_id,driver_version,memory.total,memory.used,memory.free,"
             "utilization.aip,temperature.aip,power.draw",
             &s);
    assert_int_equal(s.ngpus, 4);
    assert_int_equal(s.nwarnings, 0);
    gi_obs_free(&s);
}

/* Gaudi1 on AWS DL1: nounits header keeps [MiB]; bus ids not xx:00.0. */
static void gaudi1_dl1(void **state)
{
    struct gi_obs_set s = {0};
    const struct gi_gpu_obs *g;

    (void)state;
    parse_ok("gaudi1_nounits.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    assert_int_equal(s.nwarnings, 0);
    g = by_bus(&s, "0000:20:1d.0");
    assert_string_equal(g->name, "Intel Gaudi HL-205");
    assert_string_equal(g->uuid, "00P1-HL2000A1-14-P64W99-13-05-03");
    NUM(g->memory_total_mib, 32768);
    NUM(g->memory_used_mib, 512);
    NUM(g->util_gpu_pct, 15);
    NUM(g->power_w, 103);
    g = by_bus(&s, "0000:90:1e.0");
    assert_string_equal(g->serial, "AL51002217");
    gi_obs_free(&s);
}

/* N/A, [N/A], words, wrong units, blank cells, a short row, impossible
 * readings, no uuid: fields absent, rows kept, a log prefix skipped. */
static void edge_values(void **state)
{
    struct gi_obs_set s = {0};
    const struct gi_gpu_obs *g;

    (void)state;
    parse_ok("edge_values.csv", NULL, &s);
    assert_int_equal(s.ngpus, 4);
    g = &s.gpus[0];
    assert_string_equal(g->uuid, "01P0-HL2080A0-15-TF8A81-09-07-06");
    ABSENT(g->memory_used_mib); /* N/A */
    ABSENT(g->util_gpu_pct);    /* [N/A] */
    ABSENT(g->temp_c);          /* 505712272 C */
    ABSENT(g->power_w);         /* 1900 W on a 600 W card */
    NUM(g->memory_total_mib, 98304);
    g = &s.gpus[1];
    assert_int_equal(g->index, 1); /* " 2 " spacing is fine, and so is ",HL-225" */
    assert_string_equal(g->name, "Intel Gaudi2 HL-225");
    assert_string_equal(g->uuid, ""); /* uuid "na", serial blank */
    assert_string_equal(g->serial, "");
    ABSENT(g->util_gpu_pct); /* "busy" */
    NUM(g->memory_used_mib, 768);
    NUM(g->power_w, 90);
    g = &s.gpus[2];
    assert_string_equal(g->uuid, "HL-SN-AM50016190"); /* the serial stands in */
    ABSENT(g->util_gpu_pct);                          /* "12 W" is not a percentage */
    NUM(g->temp_c, 30);                               /* one cell short: */
    ABSENT(g->power_w);                               /* the missing one is absent */
    g = &s.gpus[3];
    assert_string_equal(g->pci_bus_id, "");
    NUM(g->power_w, 80);
    assert_int_equal(s.nwarnings, 8);
    gi_obs_free(&s);
}

/* Loop mode: a repeated header, and each snapshot replacing the last. */
static void edge_loop(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    parse_ok("edge_loop.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    NUM(s.gpus[0].memory_used_mib, 91000);
    NUM(s.gpus[0].util_gpu_pct, 88);
    NUM(s.gpus[1].memory_used_mib, 118000);
    assert_string_equal(s.gpus[0].name, "Intel Gaudi3"); /* from the uuid */
    gi_obs_free(&s);
}

/* A comma inside the name: the cells around it still land right. */
static void edge_comma_crlf(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    parse_ok("edge_comma_name.csv", NULL, &s);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].uuid, "01P0-HL2080A0-15-TG1C07-05-01-04");
    assert_string_equal(s.gpus[0].pci_bus_id, "0000:19:00.0");
    assert_string_equal(s.gpus[0].name, "Intel Gaudi2 HL-225, custom");
    NUM(s.gpus[0].power_w, 88);
    parse_ok("edge_crlf.csv", NULL, &s);
    assert_int_equal(s.ngpus, 2);
    assert_string_equal(s.gpus[1].name, "Intel Gaudi2E HL-288E");
    assert_string_equal(s.gpus[1].pci_bus_id, "0000:33:00.0");
    gi_obs_free(&s);
}

/* Structure errors: nothing appended, the line named. */
static void query_malformed(void **state)
{
    struct gi_obs_set s = {0};
    char err[HLSMI_ERR_LEN];
    static const char data_first[] = "0, HL-225, 01P0-X, 0000:19:00.0\n";
    static const char no_field[] = "foo, bar\n1, 2\n";
    static const char garbage[] = "hl-smi: command failed!\n";

    (void)state;
    parse_ok("gaudi2_units.csv", NULL, &s);
    assert_int_equal(hlsmi_parse_query(data_first, strlen(data_first), NULL, &s, err, sizeof err),
                     GI_INVALID);
    assert_non_null(strstr(err, "line 1"));
    assert_int_equal(hlsmi_parse_query(no_field, strlen(no_field), NULL, &s, err, sizeof err),
                     GI_INVALID);
    assert_int_equal(hlsmi_parse_query(garbage, strlen(garbage), NULL, &s, err, sizeof err),
                     GI_INVALID);
    assert_int_equal(hlsmi_parse_query("", 0, "index,Not A Field", &s, err, sizeof err),
                     GI_INVALID);
    assert_int_equal(s.ngpus, 2);
    assert_int_equal(s.nwarnings, 0);
    assert_int_equal(hlsmi_parse_query("", 0, NULL, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 2);
    gi_obs_free(&s);
}

static void table_ok(const char *name, struct gi_obs_set *s)
{
    char err[HLSMI_ERR_LEN] = "";
    size_t len;
    char *d = fixture(name, &len);
    int rc = hlsmi_parse_table(d, len, s, err, sizeof err);

    free(d);
    if (rc != GI_OK)
        fail_msg("%s: %s", name, err);
}

/* Layout up to 1.18: a process row of N/A is no process, even with
 * memory in use; a filled row is one, on the AIP's bus. */
static void table_old_layout(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    table_ok("table_gaudi2_118.txt", &s);
    assert_int_equal(s.nprocs, 0);
    parse_ok("gaudi1_nounits.csv", NULL, &s);
    table_ok("table_gaudi1_18.txt", &s);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 10);
    assert_string_equal(s.procs[0].name, "python name");
    NUM(s.procs[0].used_mib, 1024);
    assert_string_equal(s.procs[0].pci_bus_id, "0000:20:1d.0");
    assert_string_equal(s.procs[0].gpu_uuid, "00P1-HL2000A1-14-P64W99-13-05-03");
    gi_obs_free(&s);
}

/* Layout from 1.20 (Nic Driver line, Uncor-Events, P0, other widths). */
static void table_new_layout(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    parse_ok("gaudi3_noheader_nounits.csv",
             "index,name,uuid,bus_id,memory.total,memory.used,memory.free,utilization.aip,"
             "temperature.aip,power.draw",
             &s);
    table_ok("table_gaudi3_121.txt", &s);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 48211);
    assert_string_equal(s.procs[0].name, "python3 train.py --model llama");
    NUM(s.procs[0].used_mib, 119136);
    assert_string_equal(s.procs[0].gpu_uuid, "01P4-HL3090A0-18-UBX204-02-08-01");
    gi_obs_free(&s);
}

/* In a container: pid N/A but memory shown → an anonymous process;
 * every line carries the logging prefix. */
static void table_container(void **state)
{
    struct gi_obs_set s = {0};
    char err[HLSMI_ERR_LEN];
    static const char not_table[] = "index, uuid\n0, x\n";

    (void)state;
    table_ok("table_container.txt", &s);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, -1);
    NUM(s.procs[0].used_mib, 24065);
    assert_string_equal(s.procs[0].pci_bus_id, "0000:4d:00.0");
    assert_int_equal(hlsmi_parse_table(not_table, strlen(not_table), &s, err, sizeof err),
                     GI_INVALID);
    assert_int_equal(s.nprocs, 1);
    gi_obs_free(&s);
}

/* hl-smi -q: firmware per bus, serial and uuid where the CSV had none;
 * blocks of other buses ignored; not a log at all is refused. */
static void log_firmware(void **state)
{
    struct gi_obs_set s = {0};
    char err[HLSMI_ERR_LEN] = "";
    size_t len;
    char *d;
    struct gi_gpu_obs *g;

    (void)state;
    g = gi_obs_add_gpu(&s); /* a GPU the caller had before: not touched */
    strcpy(g->pci_bus_id, "0000:19:00.0");
    g = gi_obs_add_gpu(&s);
    strcpy(g->pci_bus_id, "0000:19:00.0");
    g = gi_obs_add_gpu(&s);
    strcpy(g->pci_bus_id, "0000:43:00.0");
    strcpy(g->serial, "KEEP");
    d = fixture("log_gaudi2_q.txt", &len);
    if (hlsmi_parse_log(d, len, &s, 1, err, sizeof err) != GI_OK)
        fail_msg("%s", err);
    free(d);
    assert_string_equal(s.gpus[0].vbios, "");
    assert_string_equal(s.gpus[1].vbios, "hl-gaudi2-1.17.0-fw-51.2.0-sec-9");
    assert_string_equal(s.gpus[1].serial, "AM50017402");
    assert_string_equal(s.gpus[1].uuid, "01P0-HL2080A0-15-TG1C07-05-01-04");
    assert_string_equal(s.gpus[2].vbios, "hl-gaudi2-1.16.2-fw-50.1.2-sec-9");
    assert_string_equal(s.gpus[2].serial, "KEEP");
    d = fixture("log_gaudi3_q.txt", &len); /* logging prefix, N/A firmware */
    assert_int_equal(hlsmi_parse_log(d, len, &s, 0, err, sizeof err), GI_OK);
    free(d);
    d = fixture("gaudi2_units.csv", &len);
    assert_int_equal(hlsmi_parse_log(d, len, &s, 0, err, sizeof err), GI_INVALID);
    free(d);
    gi_obs_free(&s);
}

static void model_names(void **state)
{
    char m[GI_NAME_LEN];

    (void)state;
    hlsmi_model_name("HL-205", "", m, sizeof m);
    assert_string_equal(m, "Intel Gaudi HL-205");
    hlsmi_model_name("HL-225B", NULL, m, sizeof m);
    assert_string_equal(m, "Intel Gaudi2 HL-225B");
    hlsmi_model_name("HL-338", NULL, m, sizeof m);
    assert_string_equal(m, "Intel Gaudi3 HL-338");
    hlsmi_model_name("", "01P0-HL2080A0-15-TF8A81-09-07-06", m, sizeof m);
    assert_string_equal(m, "Intel Gaudi2");
    hlsmi_model_name("", "00P1-HL2000A1-14-P64W99-13-05-03", m, sizeof m);
    assert_string_equal(m, "Intel Gaudi");
    hlsmi_model_name("HL-999", "na", m, sizeof m);
    assert_string_equal(m, "Intel HL-999");
    hlsmi_model_name(NULL, "na", m, sizeof m);
    assert_string_equal(m, "");
    NUM(hlsmi_power_cap_w("Intel Gaudi3 HL-325L"), 900);
    NUM(hlsmi_power_cap_w("Intel Gaudi2E HL-288E"), 450);
    NUM(hlsmi_power_cap_w("NVIDIA H100"), 0);
}

static void accel_minors(void **state)
{
    int legacy = -1;

    (void)state;
    assert_int_equal(accelfd_minor("/dev/accel/accel3", &legacy), 3);
    assert_int_equal(legacy, 0);
    assert_int_equal(accelfd_minor("/dev/hl7", &legacy), 7);
    assert_int_equal(legacy, 1);
    assert_int_equal(accelfd_minor("/dev/accel/accel_controlD3", &legacy), -1);
    assert_int_equal(accelfd_minor("/dev/hl0_control", &legacy), -1);
    assert_int_equal(accelfd_minor("/dev/accel/accel", &legacy), -1);
    assert_int_equal(accelfd_minor("/dev/nvidia0", &legacy), -1);
}

static void mkdirs(const char *root, const char *rel)
{
    char path[512], *q;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (q = path + strlen(root) + 1; (q = strchr(q, '/')) != NULL; q++) {
        *q = '\0';
        mkdir(path, 0755);
        *q = '/';
    }
    mkdir(path, 0755);
}

static void link_at(const char *root, const char *rel, const char *target)
{
    char path[512];

    snprintf(path, sizeof path, "%s/%s", root, rel);
    assert_int_equal(symlink(target, path), 0);
}

/* Processes holding /dev/accel devices open: a new one on an AIP the
 * table says nothing about, the pid of an anonymous table row, control
 * nodes and other devices ignored. */
static void accel_scan(void **state)
{
    char root[] = "/tmp/test_hlsmi_XXXXXX", cmd[600];
    struct gi_obs_set s = {0};
    struct gi_proc_obs *p;

    (void)state;
    assert_non_null(mkdtemp(root));
    mkdirs(root, "proc/4242/fd");
    mkdirs(root, "proc/77/fd");
    mkdirs(root, "proc/self");
    mkdirs(root, "sys/class/accel/accel0");
    mkdirs(root, "sys/class/accel/accel1");
    link_at(root, "proc/4242/fd/3", "/dev/accel/accel1");
    link_at(root, "proc/4242/fd/4", "/dev/accel/accel_controlD1");
    link_at(root, "proc/4242/fd/5", "/dev/accel/accel1");
    link_at(root, "proc/77/fd/9", "/dev/accel/accel0");
    link_at(root, "proc/77/fd/1", "/dev/null");
    link_at(root, "sys/class/accel/accel0/device", "../../../0000:5d:00.0");
    link_at(root, "sys/class/accel/accel1/device", "../../../0000:9b:00.0");
    parse_ok("gaudi3_noheader_nounits.csv",
             "index,name,uuid,bus_id,memory.total,memory.used,memory.free,utilization.aip,"
             "temperature.aip,power.draw",
             &s);
    p = gi_obs_add_proc(&s); /* the table's anonymous row on AIP 0 */
    strcpy(p->pci_bus_id, "0000:5d:00.0");
    p->used_mib = 672;
    assert_int_equal(accelfd_scan(root, &s, 0), 2);
    assert_int_equal(s.nprocs, 2);
    assert_int_equal(s.procs[0].pid, 77);
    NUM(s.procs[0].used_mib, 672);
    assert_int_equal(s.procs[1].pid, 4242);
    assert_string_equal(s.procs[1].gpu_uuid, "01P4-HL3090A0-18-UBX204-02-08-01");
    ABSENT(s.procs[1].used_mib);
    assert_int_equal(accelfd_scan(root, &s, 0), 0); /* already known */
    gi_obs_free(&s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gaudi2_units),     cmocka_unit_test(gaudi3_noheader),
        cmocka_unit_test(gaudi1_dl1),       cmocka_unit_test(edge_values),
        cmocka_unit_test(edge_loop),        cmocka_unit_test(edge_comma_crlf),
        cmocka_unit_test(query_malformed),  cmocka_unit_test(table_old_layout),
        cmocka_unit_test(table_new_layout), cmocka_unit_test(table_container),
        cmocka_unit_test(model_names),      cmocka_unit_test(accel_minors),
        cmocka_unit_test(accel_scan),       cmocka_unit_test(log_firmware),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
