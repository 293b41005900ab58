/* The aws source's credential helpers (src/collect/aws_creds.c) that
 * need no network: the signing region of an STS endpoint, and when
 * temporary keys are due for renewal. */
#include "unit.h"

#include <string.h>

#include "collect/aws_creds.h"

static void sts_region(void **state)
{
    char r[40];

    (void)state;
    aws_sts_region("https://sts.amazonaws.com", r, sizeof r);
    assert_string_equal(r, "us-east-1");
    aws_sts_region("https://sts.eu-west-1.amazonaws.com/", r, sizeof r);
    assert_string_equal(r, "eu-west-1");
    aws_sts_region("https://sts.cn-north-1.amazonaws.com.cn", r, sizeof r);
    assert_string_equal(r, "cn-north-1");
    /* A proxy, a stand-in, another domain, a name that is no region: the
     * global endpoint's region. */
    aws_sts_region("http://127.0.0.1:4566/", r, sizeof r);
    assert_string_equal(r, "us-east-1");
    aws_sts_region("https://sts.evil.example.com", r, sizeof r);
    assert_string_equal(r, "us-east-1");
    aws_sts_region("https://sts.US_WEST.amazonaws.com", r, sizeof r);
    assert_string_equal(r, "us-east-1");
}

static void due(void **state)
{
    struct aws_auth a;

    (void)state;
    memset(&a, 0, sizeof a);
    a.cur.expires = 10000;
    assert_false(aws_auth_due(&a, 9999)); /* the config's keys are never renewed */
    a.temporary = true;
    assert_false(aws_auth_due(&a, 10000 - AWS_CREDS_REFRESH_S - 1));
    assert_true(aws_auth_due(&a, 10000 - AWS_CREDS_REFRESH_S));
    assert_true(aws_auth_due(&a, 20000));
    a.cur.expires = 0;
    assert_false(aws_auth_due(&a, 20000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sts_region),
        cmocka_unit_test(due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
