/* Declared Prometheus mapping: the vendor-like fixture through the text
 * parser gives exact GPU records; units and scales convert; NaN, infinite
 * and out-of-range values leave only their field absent; the mapping is
 * validated with field names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/promapi.h"
#include "parse/prommap.h"
#include "parse/promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define assert_near(a, b) assert_true(fabs((a) - (double)(b)) <= 1e-9 * (fabs((double)(b)) + 1))

static const char *const MAPPING =
    "{\"uuid_label\":\"gpu_uuid\",\"host_label\":\"node\",\"index_label\":\"card\","
    "\"model\":{\"label\":\"model_name\",\"metric\":\"vendor_gpu_info\"},"
    "\"utilization\":{\"metric\":\"vendor_gpu_busy_percent\",\"unit\":\"percent\"},"
    "\"memory_used\":{\"metric\":\"vendor_gpu_memory_bytes\",\"unit\":\"bytes\","
    "\"match\":{\"type\":\"used\"}},"
    "\"memory_total\":{\"metric\":\"vendor_gpu_memory_bytes\",\"unit\":\"bytes\","
    "\"match\":{\"type\":\"total\"}},"
    "\"power\":{\"metric\":\"vendor_gpu_power_milliwatts\",\"unit\":\"milliwatts\"},"
    "\"temperature\":{\"metric\":\"vendor_gpu_temperature_celsius\",\"scale\":1}}";

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    return j;
}

static const struct gi_gpu_obs *find(const struct gi_obs_set *set, const char *uuid)
{
    for (size_t i = 0; i < set->ngpus; i++)
        if (strcmp(set->gpus[i].uuid, uuid) == 0)
            return &set->gpus[i];
    return NULL;
}

/* Runs text through the mapping into set. */
static int run(const char *mapping, const char *text, size_t len, struct gi_obs_set *set)
{
    json_t *j = parse(mapping);
    struct prommap m;
    struct prommap_pull p;
    struct prom_error err;
    char field[80], msg[256];
    int rc;

    assert_int_equal(prommap_read(j, &m, field, sizeof field, msg, sizeof msg), 0);
    prommap_begin(&p, &m, set);
    rc = prom_parse_text(text, len, prommap_sample, &p, &err);
    if (rc == GI_OK)
        prommap_finish(&p);
    prommap_free(&p);
    json_decref(j);
    return rc;
}

static void test_vendor_fixture(void **state)
{
    struct gi_obs_set set = {0};
    size_t len;
    char *text = unit_fixture("prom", "vendor_gpu.prom", &len);
    const struct gi_gpu_obs *a, *b, *c;

    (void)state;
    assert_int_equal(run(MAPPING, text, len, &set), GI_OK);
    assert_int_equal(set.ngpus, 3);
    a = find(&set, "VND-1111-0");
    b = find(&set, "VND-1111-1");
    c = find(&set, "VND-2222-0");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_string_equal(a->hostname, "accel-01");
    assert_string_equal(a->name, "Acme X1000 64GB");
    assert_int_equal(a->index, 0);
    assert_near(a->util_gpu_pct, 37.5);
    assert_near(a->memory_used_mib, 8192);
    assert_near(a->memory_total_mib, 65536);
    assert_near(a->power_w, 215);
    assert_near(a->temp_c, 61);
    assert_int_equal(b->index, 1);
    assert_true(isnan(b->temp_c)); /* NaN */
    assert_near(b->power_w, 90);
    assert_true(isnan(c->util_gpu_pct)); /* +Inf */
    assert_near(c->power_w, 120.5);
    assert_string_equal(c->name, "Acme X500 32GB");
    /* NaN, +Inf, and the sample without a GPU uuid. */
    assert_int_equal(set.nwarnings, 3);
    gi_obs_free(&set);
    free(text);
}

static void test_units_ranges_hosts(void **state)
{
    static const char map[] = "{\"uuid_label\":\"u\",\"host_label\":\"instance\","
                              "\"utilization\":{\"metric\":\"busy\",\"unit\":\"ratio\"},"
                              "\"memory_used\":{\"metric\":\"mem\",\"unit\":\"gib\"},"
                              "\"memory_total\":{\"metric\":\"memt\",\"scale\":0.5},"
                              "\"power\":{\"metric\":\"pw\",\"unit\":\"microwatts\"},"
                              "\"temperature\":{\"metric\":\"t\",\"unit\":\"millicelsius\"}}";
    static const char text[] = "busy{u=\"A\",instance=\"node1:9100\"} 0.25\n"
                               "mem{u=\"A\",instance=\"node1:9100\"} 2\n"
                               "memt{u=\"A\",instance=\"node1:9100\"} 8192\n"
                               "pw{u=\"A\",instance=\"node1:9100\"} 300000000\n"
                               "t{u=\"A\",instance=\"node1:9100\"} 45500\n"
                               "busy{u=\"B\",instance=\"[fd00::1]:9100\"} 1.5\n"
                               "t{u=\"B\",instance=\"[fd00::1]:9100\"} 9000000\n"
                               "busy{u=\"C\",instance=\"N/A\"} 0.5\n"
                               "busy{u=\"D\",instance=\"fd00::2\"} -Inf\n";
    struct gi_obs_set set = {0};
    const struct gi_gpu_obs *a, *b, *d;

    (void)state;
    assert_int_equal(run(map, text, sizeof text - 1, &set), GI_OK);
    assert_int_equal(set.ngpus, 3);
    a = find(&set, "A");
    b = find(&set, "B");
    d = find(&set, "D");
    assert_string_equal(a->hostname, "node1");
    assert_near(a->util_gpu_pct, 25);
    assert_near(a->memory_used_mib, 2048);
    assert_near(a->memory_total_mib, 4096);
    assert_near(a->power_w, 300);
    assert_near(a->temp_c, 45.5);
    assert_string_equal(b->hostname, "fd00::1");
    assert_true(isnan(b->util_gpu_pct)); /* 150 %: out of range */
    assert_true(isnan(b->temp_c));       /* 9000 degrees */
    assert_string_equal(d->hostname, "fd00::2");
    assert_true(isnan(d->util_gpu_pct));
    assert_null(find(&set, "C")); /* a placeholder host */
    /* B's two ranges, D's -Inf, C's host. */
    assert_int_equal(set.nwarnings, 4);
    gi_obs_free(&set);
}

static void test_many_gpus(void **state)
{
    size_t cap = 6000 * 64, len = 0;
    char *text = malloc(cap);
    struct gi_obs_set set = {0};

    (void)state;
    for (int i = 0; i < 3000; i++)
        len += (size_t)snprintf(text + len, cap - len, "busy{u=\"G-%d\",instance=\"h%d\"} %d\n", i,
                                i % 7, i % 100);
    /* Every GPU again: one record each, the last value wins. */
    for (int i = 0; i < 3000; i++)
        len += (size_t)snprintf(text + len, cap - len, "busy{u=\"G-%d\",instance=\"h%d\"} 1\n", i,
                                i % 7);
    assert_int_equal(run("{\"uuid_label\":\"u\",\"host_label\":\"instance\","
                         "\"utilization\":{\"metric\":\"busy\",\"unit\":\"percent\"}}",
                         text, len, &set),
                     GI_OK);
    assert_int_equal(set.ngpus, 3000);
    assert_near(find(&set, "G-2999")->util_gpu_pct, 1);
    assert_int_equal(set.nwarnings, 0);
    gi_obs_free(&set);
    free(text);
}

static void expect_bad(const char *mapping, const char *field_want)
{
    json_t *j = parse(mapping);
    struct prommap m;
    char field[80], msg[256];

    assert_int_equal(prommap_read(j, &m, field, sizeof field, msg, sizeof msg), -1);
    assert_string_equal(field, field_want);
    assert_non_null(strstr(msg, field_want));
    json_decref(j);
}

static void test_validation(void **state)
{
    (void)state;
    expect_bad("{\"host_label\":\"h\",\"power\":{\"metric\":\"p\",\"unit\":\"watts\"}}",
               "config.mapping.uuid_label");
    expect_bad("{\"uuid_label\":\"u\",\"host_label\":\"h\",\"power\":{\"metric\":\"p\","
               "\"unit\":\"bytes\"}}",
               "config.mapping.power.unit");
    expect_bad("{\"uuid_label\":\"u\",\"host_label\":\"h\",\"utilization\":{\"metric\":\"9x\","
               "\"unit\":\"percent\"}}",
               "config.mapping.utilization.metric");
    expect_bad("{\"uuid_label\":\"u\",\"host_label\":\"h\",\"utilization\":{\"metric\":\"x\","
               "\"unit\":\"percent\",\"match\":{\"a-b\":\"c\"}}}",
               "config.mapping.utilization.match");
    expect_bad("{\"uuid_label\":\"u\",\"host_label\":\"h\",\"model\":{\"metric\":\"info\"}}",
               "config.mapping.model.label");
    expect_bad("{\"uuid_label\":\"u\",\"host_label\":\"h\"}", "config.mapping");
}

static void test_selector(void **state)
{
    json_t *j = parse(MAPPING);
    struct prommap m;
    char field[80], msg[256], sel[512];

    (void)state;
    assert_int_equal(prommap_read(j, &m, field, sizeof field, msg, sizeof msg), 0);
    assert_int_equal(prommap_selector(&m, sel, sizeof sel), 0);
    assert_string_equal(sel, "{__name__=~\"vendor_gpu_info|vendor_gpu_busy_percent|"
                             "vendor_gpu_memory_bytes|vendor_gpu_power_milliwatts|"
                             "vendor_gpu_temperature_celsius\"}");
    assert_int_equal(prommap_selector(&m, sel, 20), -1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vendor_fixture), cmocka_unit_test(test_units_ranges_hosts),
        cmocka_unit_test(test_many_gpus),      cmocka_unit_test(test_validation),
        cmocka_unit_test(test_selector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
