/* Unit tests for the EC2 answer parsers (src/parse/aws.c) over the
 * recorded answers in tests/fixtures/aws/: reservations holding several
 * instances, the next page's token, the state code's high byte, tags
 * absent or empty, the Name tag, the "ml." prefix, launch times in both
 * forms, unreadable fields, error documents, and the GPUs of instance
 * types (fractional, non-NVIDIA, none). */
#include "unit.h"

#include "core/status.h"
#include "parse/aws.h"

#include <stdlib.h>
#include <string.h>

static char *slurp(const char *name, size_t *len) { return unit_fixture("aws", name, len); }

static const struct cloud_instance *find(const struct aws_instances *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].instance_id, id) == 0)
            return &l->items[i];
    fail_msg("instance %s not found", id);
    return NULL;
}

static const char *tag(const struct cloud_instance *v, const char *key)
{
    for (size_t i = 0; i < v->ntags; i++)
        if (strcmp(v->tags[i].key, key) == 0)
            return v->tags[i].value;
    return NULL;
}

static void test_pages(void **state)
{
    struct aws_instances l = {0};
    char err[AWS_ERR_LEN] = "";
    size_t len;
    char *a = slurp("describe-instances-1.xml", &len), *b;
    const struct cloud_instance *v;

    (void)state;
    assert_status(aws_parse_instances(a, len, "us-east-1", &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.next_token, "eyJ2IjoiMiIsImMiOiJwYWdlLTIifQ==");
    v = find(&l, "i-0p4d000000000aaaa");
    assert_string_equal(v->provider, "aws");
    assert_string_equal(v->account, "123456789012");
    assert_string_equal(v->region, "us-east-1");
    assert_string_equal(v->zone, "us-east-1c");
    assert_string_equal(v->machine_type, "p4d.24xlarge");
    assert_int_equal(v->state, CLOUD_RUNNING);
    assert_string_equal(v->state_raw, "running");
    assert_string_equal(v->name, "llm-train-01");
    assert_string_equal(v->private_ip, "10.0.1.17");
    assert_int_equal(v->ntags, 3);
    assert_string_equal(tag(v, "team"), "llm-train");
    assert_string_equal(tag(v, "aws:autoscaling:groupName"), "llm-train-asg");
    assert_int_equal(v->gpu_count, -1);
    /* "${LAUNCH_P4D}" is not a time: absent, counted, instance kept. */
    assert_int_equal(v->launch_time, 0);
    assert_true(l.warnings >= 1);
    v = find(&l, "i-0g5000000000bbbbb");
    assert_int_equal(v->ntags, 0);
    assert_null(v->tags);
    assert_string_equal(v->name, "");

    b = slurp("describe-instances-2.xml", &len);
    assert_status(aws_parse_instances(b, len, "us-east-1", &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.next_token, "");
    v = find(&l, "i-0new0000000cccccc");
    assert_int_equal(v->state, CLOUD_RUNNING); /* 272 & 0xFF = 16 */
    assert_string_equal(v->machine_type, "x9.mystery");
    v = find(&l, "i-0stop00000000dddd");
    assert_int_equal(v->state, CLOUD_STOPPED);
    assert_string_equal(v->machine_type, "g5.xlarge");
    assert_int_equal(v->launch_time, 1772675952); /* 2026-03-05T01:59:12+00:00 */
    assert_int_equal(v->ntags, 0);
    aws_instances_free(&l);
    free(a);
    free(b);
}

static void test_errors(void **state)
{
    struct aws_instances l = {0};
    char err[AWS_ERR_LEN] = "", code[64], msg[128];
    size_t len;
    char *e = slurp("error-throttled.xml", &len);

    (void)state;
    assert_true(aws_parse_error(e, len, code, sizeof code, msg, sizeof msg));
    assert_string_equal(code, "RequestLimitExceeded");
    assert_string_equal(msg, "Request limit exceeded.");
    assert_status(aws_parse_instances(e, len, "us-east-1", &l, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "RequestLimitExceeded"));
    assert_int_equal(l.n, 0);
    free(e);
    e = slurp("error-expired.xml", &len);
    assert_true(aws_parse_error(e, len, code, sizeof code, msg, sizeof msg));
    assert_string_equal(code, "RequestExpired");
    free(e);
    assert_false(aws_parse_error("<x/>", 4, code, sizeof code, msg, sizeof msg));
    assert_false(aws_parse_error("not xml", 7, code, sizeof code, msg, sizeof msg));
    assert_status(aws_parse_instances("<DescribeInstancesResponse><reservationSet>", 43, "r", &l,
                                      err, sizeof err),
                  GI_INVALID);
    assert_non_null(strstr(err, "not XML"));
    /* An instance without an id is skipped, the rest kept. */
    {
        const char *x = "<DescribeInstancesResponse><reservationSet><item><instancesSet>"
                        "<item><instanceType>p5.48xlarge</instanceType></item>"
                        "<item><instanceId>i-1</instanceId><instanceState><code>x</code>"
                        "<name>stopping</name></instanceState></item>"
                        "</instancesSet></item></reservationSet></DescribeInstancesResponse>";
        assert_status(aws_parse_instances(x, strlen(x), "r", &l, err, sizeof err), GI_OK);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.skipped, 1);
        assert_int_equal(l.items[0].state, CLOUD_STOPPING); /* by name when the code is bad */
        assert_string_equal(l.items[0].account, "");
    }
    aws_instances_free(&l);
}

static const struct aws_gpu_type *type(const struct aws_types *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->items[i].type, name) == 0)
            return &t->items[i];
    fail_msg("type %s not found", name);
    return NULL;
}

static void test_types(void **state)
{
    struct aws_types t = {0};
    char err[AWS_ERR_LEN] = "";
    size_t len;
    char *a = slurp("describe-instance-types.xml", &len);
    const struct aws_gpu_type *g;

    (void)state;
    assert_status(aws_parse_types(a, len, &t, err, sizeof err), GI_OK);
    assert_int_equal(t.n, 8);
    g = type(&t, "p4d.24xlarge");
    assert_string_equal(g->model, "NVIDIA A100");
    assert_int_equal(g->count, 8);
    assert_int_equal(g->memory_mib, 40960);
    g = type(&t, "g6f.large");
    assert_int_equal(g->count, 1); /* Count 0, one logical GPU of 1/8 */
    assert_true(g->partition > 0.124 && g->partition < 0.126);
    assert_string_equal(g->model, "NVIDIA L4");
    assert_int_equal(g->memory_mib, 2861);
    g = type(&t, "g6f.4xlarge");
    assert_int_equal(g->count, 1);
    assert_true(g->partition > 0.499 && g->partition < 0.501);
    assert_int_equal(g->memory_mib, 11444);
    g = type(&t, "g6f.2xlarge"); /* the element names as the JSON form spells them */
    assert_int_equal(g->count, 1);
    assert_true(g->partition > 0.249 && g->partition < 0.251);
    g = type(&t, "g5.xlarge");
    assert_true(g->partition > 0.999 && g->partition < 1.001); /* whole */
    g = type(&t, "dl1.24xlarge");
    assert_string_equal(g->model, "Habana Gaudi HL-205");
    g = type(&t, "m5.large");
    assert_int_equal(g->count, 0);
    assert_string_equal(g->model, "");
    assert_string_equal(t.next_token, "");
    aws_types_free(&t);
    free(a);
}

/* STS AssumeRole: the credentials, the error document, and answers that
 * give no usable keys. */
static void test_assume_role(void **state)
{
    static const char ok[] =
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult>"
        "<Credentials><SessionToken> FwoGZXIvYXdzEBY= </SessionToken>"
        "<SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>"
        "<Expiration>2026-12-01T13:34:41Z</Expiration><AccessKeyId>ASIAIOSFODNN7EXAMPLE"
        "</AccessKeyId></Credentials></AssumeRoleResult></AssumeRoleResponse>";
    static const char denied[] =
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender"
        "</Type><Code>AccessDenied</Code><Message>not authorized to perform: sts:AssumeRole"
        "</Message></Error><RequestId>x</RequestId></ErrorResponse>";
    static const char no_token[] =
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>"
        "<SecretAccessKey>s</SecretAccessKey><Expiration>2026-12-01T13:34:41Z</Expiration>"
        "</Credentials></AssumeRoleResult></AssumeRoleResponse>";
    static const char bad_id[] =
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>AS:IA</AccessKeyId>"
        "<SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken>"
        "<Expiration>2026-12-01T13:34:41Z</Expiration></Credentials></AssumeRoleResult>"
        "</AssumeRoleResponse>";
    static const char bad_time[] =
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>"
        "<SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken>"
        "<Expiration>soon</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>";
    struct aws_creds c;
    char err[AWS_ERR_LEN], code[64], msg[128];

    (void)state;
    assert_status(aws_parse_assume_role(ok, sizeof ok - 1, &c, err, sizeof err), GI_OK);
    assert_string_equal(c.key_id, "ASIAIOSFODNN7EXAMPLE");
    assert_string_equal(c.secret, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
    assert_string_equal(c.token, "FwoGZXIvYXdzEBY=");
    assert_int_equal(c.expires, 1796132081);

    assert_status(aws_parse_assume_role(denied, sizeof denied - 1, &c, err, sizeof err),
                  GI_INVALID);
    assert_non_null(strstr(err, "AccessDenied"));
    assert_string_equal(c.key_id, "");
    assert_true(aws_parse_error(denied, sizeof denied - 1, code, sizeof code, msg, sizeof msg));
    assert_string_equal(code, "AccessDenied");
    assert_non_null(strstr(msg, "sts:AssumeRole"));

    assert_status(aws_parse_assume_role(no_token, sizeof no_token - 1, &c, err, sizeof err),
                  GI_INVALID);
    assert_non_null(strstr(err, "SessionToken is missing"));
    assert_status(aws_parse_assume_role(bad_id, sizeof bad_id - 1, &c, err, sizeof err),
                  GI_INVALID);
    assert_non_null(strstr(err, "AccessKeyId"));
    assert_status(aws_parse_assume_role(bad_time, sizeof bad_time - 1, &c, err, sizeof err),
                  GI_INVALID);
    assert_non_null(strstr(err, "Expiration"));
    assert_status(aws_parse_assume_role("{}", 2, &c, err, sizeof err), GI_INVALID);
}

/* The metadata service's role credentials (JSON). */
static void test_imds(void **state)
{
    static const char ok[] = "{\"Code\": \"Success\", \"LastUpdated\": \"2026-12-01T08:00:00Z\", "
                             "\"Type\": \"AWS-HMAC\", \"AccessKeyId\": \"ASIAIMDS\", "
                             "\"SecretAccessKey\": \"sec/ret+\", \"Token\": \"tok==\", "
                             "\"Expiration\": \"2026-12-01T14:00:00Z\"}";
    static const char failed[] = "{\"Code\": \"AssumeRoleUnauthorizedAccess\"}";
    static const char crlf[] =
        "{\"Code\": \"Success\", \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
        "\"s\", \"Token\": \"t\\r\\nX-Evil: 1\", \"Expiration\": "
        "\"2026-12-01T14:00:00Z\"}";
    struct aws_creds c;
    char err[AWS_ERR_LEN];

    (void)state;
    assert_status(aws_parse_imds_creds(ok, sizeof ok - 1, &c, err, sizeof err), GI_OK);
    assert_string_equal(c.key_id, "ASIAIMDS");
    assert_string_equal(c.secret, "sec/ret+");
    assert_string_equal(c.token, "tok==");
    assert_int_equal(c.expires, 1796133600);
    assert_status(aws_parse_imds_creds(failed, sizeof failed - 1, &c, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "AssumeRoleUnauthorizedAccess"));
    assert_status(aws_parse_imds_creds(crlf, sizeof crlf - 1, &c, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "Token"));
    assert_status(aws_parse_imds_creds("not json", 8, &c, err, sizeof err), GI_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_types), cmocka_unit_test(test_assume_role),
        cmocka_unit_test(test_imds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
