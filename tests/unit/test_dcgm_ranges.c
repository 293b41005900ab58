/* dcgm-exporter and Prometheus pulls degrade per field: a value that is
 * NaN, a DCGM blank or out of range makes that reading absent, and the
 * GPU and its other readings are kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/status.h"
#include "parse/dcgm.h"
#include "parse/promtext.h"

#include <math.h>
#include <string.h>

static void test_out_of_range_readings(void **state)
{
    static const char text[] = "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-a\",gpu=\"0\"} 250\n"
                               "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-a\",gpu=\"0\"} 4294967295\n"
                               "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-a\",gpu=\"0\"} NaN\n"
                               "DCGM_FI_DEV_FB_USED{UUID=\"GPU-a\",gpu=\"0\"} -12\n"
                               "DCGM_FI_DEV_MEM_COPY_UTIL{UUID=\"GPU-a\",gpu=\"0\"} 17\n"
                               "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-b\",gpu=\"1\"} 42\n"
                               "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-b\",gpu=\"1\"} 61\n"
                               "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-b\",gpu=\"1\"} +Inf\n"
                               "DCGM_FI_DEV_FB_USED{UUID=\"GPU-b\",gpu=\"1\"} 2048\n"
                               "DCGM_FI_DEV_FB_FREE{UUID=\"GPU-b\",gpu=\"1\"} 79000\n";
    struct gi_obs_set set = {0};
    struct prom_error err;
    struct dcgm d;

    dcgm_begin(&d, &set);
    assert_int_equal(prom_parse_text(text, sizeof text - 1, dcgm_sample, &d, &err), GI_OK);
    assert_int_equal(dcgm_finish(&d), GI_OK);
    assert_int_equal(set.ngpus, 2);
    const struct gi_gpu_obs *a =
        strcmp(set.gpus[0].uuid, "GPU-a") == 0 ? &set.gpus[0] : &set.gpus[1];
    const struct gi_gpu_obs *b = a == &set.gpus[0] ? &set.gpus[1] : &set.gpus[0];
    assert_true(isnan(a->util_gpu_pct));    /* 250 % */
    assert_true(isnan(a->temp_c));          /* 4294967295 */
    assert_true(isnan(a->power_w));         /* NaN */
    assert_true(isnan(a->memory_used_mib)); /* -12 MiB */
    assert_true(a->util_mem_pct == 17.0);
    assert_true(b->util_gpu_pct == 42.0);
    assert_true(b->temp_c == 61.0);
    assert_true(isnan(b->power_w)); /* +Inf */
    assert_true(b->memory_total_mib == 81048.0);
    /* Out of range is counted; NaN and infinities are absent already. */
    assert_int_equal(set.nwarnings, 3);
    assert_non_null(strstr(set.warning, "GPU-a"));
    dcgm_free(&d);
    gi_obs_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_range_readings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
