/* Unit tests for the host-name patterns of a pusher token's scope
 * (src/core/model.c): validation and case-insensitive glob matching. */
#include "unit.h"

#include "core/model.h"

#include <string.h>

static void test_patterns_valid(void **state)
{
    char long_one[300];

    assert_true(gi_host_patterns_valid("fra1-*"));
    assert_true(gi_host_patterns_valid("fra1-*,ams1-gpu-00?,gpu_7.example.com"));
    assert_false(gi_host_patterns_valid(NULL));
    assert_false(gi_host_patterns_valid(""));
    assert_false(gi_host_patterns_valid("fra1-*,")); /* empty member */
    assert_false(gi_host_patterns_valid(",fra1-*"));
    assert_false(gi_host_patterns_valid("fra1 *"));     /* space */
    assert_false(gi_host_patterns_valid("fra1-[0-9]")); /* no classes */
    assert_false(gi_host_patterns_valid("a;b"));
    memset(long_one, 'a', sizeof long_one - 1);
    long_one[sizeof long_one - 1] = '\0';
    assert_false(gi_host_patterns_valid(long_one)); /* one member over 253 bytes */
}

static void test_patterns_match(void **state)
{
    assert_true(gi_host_patterns_match("fra1-*", "fra1-gpu-001"));
    assert_true(gi_host_patterns_match("fra1-*", "FRA1-GPU-001"));
    assert_true(gi_host_patterns_match("fra1-*", "fra1-"));
    assert_false(gi_host_patterns_match("fra1-*", "lon1-gpu-001"));
    assert_false(gi_host_patterns_match("fra1-*", "xfra1-gpu"));
    assert_true(gi_host_patterns_match("fra1-*,ams1-*", "ams1-node"));
    assert_true(gi_host_patterns_match("gpu-00?", "gpu-007"));
    assert_false(gi_host_patterns_match("gpu-00?", "gpu-0007"));
    assert_false(gi_host_patterns_match("gpu-00?", "gpu-00"));
    assert_true(gi_host_patterns_match("*.example.com", "a.b.example.com"));
    assert_false(gi_host_patterns_match("*.example.com", "example.com"));
    assert_true(gi_host_patterns_match("*gpu*", "fra1-gpu-01"));
    assert_true(gi_host_patterns_match("a*b*c", "axxbyyc"));
    assert_false(gi_host_patterns_match("a*b*c", "axxbyy"));
    assert_true(gi_host_patterns_match("exact", "exact"));
    assert_false(gi_host_patterns_match("exact", "exactly"));
    assert_false(gi_host_patterns_match("", "anything"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_valid),
        cmocka_unit_test(test_patterns_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
