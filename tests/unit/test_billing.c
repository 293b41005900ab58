/* Cloud billing export parser: each provider's column variants, quoting,
 * BOM and CRLF, tags without braces, GCP labels and credits, an empty
 * resource id, timestamps in every form the exports write, and bad lines
 * reported with their line and column. */
#include "unit.h"

#include "core/money.h"
#include "parse/billing.h"

#include <string.h>

static char *slurp(const char *name, size_t *len) { return unit_fixture("billing", name, len); }

/* Parses a fixture, expecting st; caller frees f. */
static void parse(const char *name, enum billing_format fmt, int st, struct billing_file *f)
{
    size_t len;
    char *data = slurp(name, &len);

    assert_status(billing_parse(data, len, fmt, 1000, f), st);
    free(data);
}

static const char *tag(const struct billing_line *l, const char *k)
{
    return json_string_value(json_object_get(l->tags, k));
}

static void test_aws_legacy(void **state)
{
    struct billing_file f;
    (void)state;

    parse("aws_cur_legacy.csv", BILLING_AUTO, GI_OK, &f);
    assert_int_equal(f.format, BILLING_AWS);
    assert_string_equal(f.variant, "aws-cur");
    assert_int_equal(f.rows, 5);
    /* m5.large, the EBS volume and the tax line are not GPU capacity. */
    assert_int_equal(f.skipped, 3);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.lines[0].line, 2);
    assert_string_equal(f.lines[0].provider, "aws");
    assert_string_equal(f.lines[0].account, "210987654321");
    assert_string_equal(f.lines[0].resource_id, "i-0a1b2c3d4e5f60718");
    assert_string_equal(f.lines[0].instance_type, "p4d.24xlarge");
    assert_int_equal(f.lines[0].cost_micros, 32772600);
    assert_string_equal(f.lines[0].currency, "USD");
    assert_int_equal(f.lines[0].start, 1793491200); /* 2026-11-01T00:00:00Z */
    assert_int_equal(f.lines[0].end, 1793491200 + 3600);
    assert_string_equal(f.lines[0].team, "vision");
    assert_string_equal(tag(&f.lines[0], "Name"), "train-01");
    assert_string_equal(f.lines[0].line_key, "qzy3pgtdm5ofuwqjaeacnpq6iut4dvbkmh2bfxkzp7ynlp7vluva/"
                                             "2026-11-01T00:00:00Z/2026-11-01T01:00:00Z");
    /* An empty resource id, a quoted tag with a comma and doubled quotes. */
    assert_string_equal(f.lines[1].resource_id, "");
    assert_string_equal(f.lines[1].instance_type, "g5.xlarge");
    assert_string_equal(f.lines[1].team, "nlp");
    assert_string_equal(tag(&f.lines[1], "Name"), "notebook, \"big\"");
    assert_int_equal(f.lines[1].line, 5);
    billing_file_free(&f);
}

static void test_aws_cur2(void **state)
{
    struct billing_file f;
    (void)state;

    parse("aws_cur2.csv", BILLING_AWS, GI_OK, &f);
    assert_string_equal(f.variant, "aws-cur2");
    assert_int_equal(f.n, 2);
    assert_int_equal(f.skipped, 1);
    assert_string_equal(f.lines[0].resource_id, "i-0123456789abcdef0");
    assert_int_equal(f.lines[0].cost_micros, 55040000);
    assert_int_equal(f.lines[0].start, 1793491200 + 86400);
    assert_string_equal(f.lines[0].team, "vision");
    assert_string_equal(tag(&f.lines[0], "env"), "prod");
    /* No product_instance_type: the family comes from the usage type. */
    assert_string_equal(f.lines[1].instance_type, "g6e.2xlarge");
    assert_int_equal(f.lines[1].cost_micros, 2242080);
    billing_file_free(&f);
}

static void test_gcp(void **state)
{
    struct billing_file f;
    (void)state;

    parse("gcp_export.csv", BILLING_AUTO, GI_OK, &f);
    assert_int_equal(f.format, BILLING_GCP);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.skipped, 1); /* E2 cores */
    assert_string_equal(f.lines[0].account, "01A2B3-C4D5E6-F7A8B9");
    assert_string_equal(f.lines[0].resource_id, "4815162342424242");
    assert_string_equal(f.lines[0].resource_name, "gpu-t4-01");
    assert_string_equal(f.lines[0].team, "vision");
    /* 0.35 less a 0.07 sustained-use credit. */
    assert_int_equal(f.lines[0].cost_micros, 280000);
    assert_int_equal(f.lines[0].credits_micros, -70000);
    assert_int_equal(f.lines[0].start, 1793491200);
    assert_string_equal(f.lines[0].instance_type, "n1-standard-8");
    /* An A2 machine by its SKU family; a local offset in the time. */
    assert_string_equal(f.lines[1].instance_type, "a2-highgpu-1g");
    assert_int_equal(f.lines[1].start, 1793491200 + 8 * 3600);
    assert_string_equal(f.lines[1].team, "nlp");
    /* No line id in the export: a digest of the cells. */
    assert_int_equal(strlen(f.lines[0].line_key), 32);
    assert_string_not_equal(f.lines[0].line_key, f.lines[1].line_key);
    billing_file_free(&f);
}

static void test_azure_ea(void **state)
{
    struct billing_file f;
    (void)state;

    parse("azure_ea.csv", BILLING_AUTO, GI_OK, &f);
    assert_int_equal(f.format, BILLING_AZURE);
    assert_string_equal(f.variant, "azure-ea");
    assert_int_equal(f.n, 2);
    assert_int_equal(f.skipped, 1); /* D4s v5 */
    assert_string_equal(f.lines[0].account, "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718");
    assert_string_equal(f.lines[0].resource_name, "AzGpu-01");
    assert_string_equal(f.lines[0].instance_type, "Standard_NC24ads_A100_v4");
    assert_int_equal(f.lines[0].cost_micros, 88152000);
    /* MM/DD/YYYY, a day long. */
    assert_int_equal(f.lines[0].start, 1793491200);
    assert_int_equal(f.lines[0].end, 1793491200 + 86400);
    /* Tags written without their outer braces. */
    assert_string_equal(f.lines[0].team, "vision");
    assert_string_equal(tag(&f.lines[0], "costcenter"), "4711");
    /* An empty ResourceId keeps the line, with its team tag. */
    assert_string_equal(f.lines[1].resource_id, "");
    assert_string_equal(f.lines[1].team, "speech");
    assert_string_equal(f.lines[1].instance_type, "NC4as T4 v3");
    billing_file_free(&f);
}

static void test_azure_payg_mca(void **state)
{
    struct billing_file f;
    (void)state;

    parse("azure_payg.csv", BILLING_AUTO, GI_OK, &f);
    assert_string_equal(f.variant, "azure-payg");
    assert_int_equal(f.n, 1);
    assert_int_equal(f.skipped, 1);
    assert_string_equal(f.lines[0].resource_name, "nd-h100-01");
    assert_int_equal(f.lines[0].cost_micros, 2359680000);
    assert_string_equal(f.lines[0].currency, "EUR");
    /* Seven fractional digits and Z. */
    assert_int_equal(f.lines[0].start, 1793491200 + 2 * 86400);
    assert_string_equal(f.lines[0].team, "nlp");
    billing_file_free(&f);

    parse("azure_mca.csv", BILLING_AUTO, GI_OK, &f);
    assert_string_equal(f.variant, "azure-mca");
    assert_int_equal(f.n, 1);
    assert_string_equal(f.lines[0].instance_type, "Standard_NV36ads_A10_v5");
    assert_int_equal(f.lines[0].cost_micros, 77040000);
    assert_int_equal(f.lines[0].start, 1793491200 + 3 * 86400);
    assert_string_equal(f.lines[0].team, "viz");
    billing_file_free(&f);
}

static void test_bad_lines(void **state)
{
    struct billing_file f;
    (void)state;

    parse("aws_bad.csv", BILLING_AUTO, GI_INVALID, &f);
    /* The CPU line's bad cells are never read. */
    assert_int_equal(f.nerr, 2);
    assert_int_equal(f.problems[0].line, 3);
    assert_string_equal(f.problems[0].column, "lineItem/UnblendedCost");
    assert_non_null(strstr(f.problems[0].reason, "not a number"));
    assert_int_equal(f.problems[1].line, 4);
    assert_string_equal(f.problems[1].column, "lineItem/UsageStartDate");
    assert_int_equal(f.n, 1);
    billing_file_free(&f);
}

static void test_headers(void **state)
{
    static const char unknown[] = "a,b,c\n1,2,3\n";
    static const char no_cost[] = "lineItem/UsageStartDate,product/instanceType\n"
                                  "2026-11-01T00:00:00Z,p5.48xlarge\n";
    static const char gpu_word[] = "usage_start_time,sku_description,cost,currency\n"
                                   "2026-11-01T00:00:00Z,Nvidia L4 GPU running in EMEA,1.5,eur\n";
    struct billing_file f;
    (void)state;

    assert_status(billing_parse(unknown, strlen(unknown), BILLING_AUTO, 10, &f), GI_INVALID);
    assert_int_equal(f.problems[0].line, 1);
    billing_file_free(&f);
    assert_status(billing_parse(no_cost, strlen(no_cost), BILLING_AUTO, 10, &f), GI_INVALID);
    assert_string_equal(f.problems[0].column, "lineitemunblendedcost");
    billing_file_free(&f);
    assert_status(billing_parse("", 0, BILLING_GCP, 10, &f), GI_INVALID);
    billing_file_free(&f);
    /* Underscored GCP names, a lower-case currency. */
    assert_status(billing_parse(gpu_word, strlen(gpu_word), BILLING_AUTO, 10, &f), GI_OK);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.lines[0].currency, "EUR");
    billing_file_free(&f);
    assert_status(billing_parse(gpu_word, strlen(gpu_word), BILLING_AUTO, 0, &f), GI_TOO_LARGE);
    billing_file_free(&f);
}

static void test_times(void **state)
{
    static const struct {
        const char *in;
        int64_t want;
    } ok[] = {
        {"2026-11-01T00:00:00Z", 1793491200},
        {"2026-11-01T00:00:00.000Z", 1793491200},
        {"2026-11-01T00:00:00.1234567Z", 1793491200},
        {"2026-11-01T00:00:00.0000000+00:00", 1793491200},
        {"2026-11-01T01:00:00+01:00", 1793491200},
        {"2026-10-31T16:00:00-08:00", 1793491200},
        {"2026-11-01 00:00:00 UTC", 1793491200},
        {"2026-11-01 00:00:00", 1793491200},
        {"2026-11-01T00:00", 1793491200},
        {"2026-11-01", 1793491200},
        {"11/01/2026", 1793491200},
        {"11/1/2026 01:00:00", 1793491200 + 3600},
        {"1793491200", 1793491200},
    };
    static const char *const bad[] = {"",           "Unknown",     "None",
                                      "2026-13-01", "2026-02-30",  "2026-11-01T25:00:00Z",
                                      "11/31/2026", "2026-11-01Tx"};
    int64_t t;
    (void)state;

    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        if (billing_time(ok[i].in, &t) != GI_OK)
            fail_msg("%s did not parse", ok[i].in);
        if (t != ok[i].want)
            fail_msg("%s: got %lld, want %lld", ok[i].in, (long long)t, (long long)ok[i].want);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (billing_time(bad[i], &t) == GI_OK)
            fail_msg("'%s' parsed", bad[i]);
}

static void test_money(void **state)
{
    int64_t m;
    char buf[32];
    (void)state;

    assert_status(gi_money_parse("2.50", GI_MONEY_STRICT, false, &m), GI_OK);
    assert_int_equal(m, 2500000);
    assert_status(gi_money_parse("0.000001", GI_MONEY_STRICT, false, &m), GI_OK);
    assert_int_equal(m, 1);
    assert_status(gi_money_parse("12", GI_MONEY_STRICT, false, &m), GI_OK);
    assert_int_equal(m, 12000000);
    assert_status(gi_money_parse("0.0000001", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse("-1", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse("1e3", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse("", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse(".", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse("1.2.3", GI_MONEY_STRICT, false, &m), GI_INVALID);
    assert_status(gi_money_parse("99999999999999", GI_MONEY_STRICT, false, &m), GI_INVALID);
    /* Exports: exponents, signs, rounding half away from zero. */
    assert_status(gi_money_parse("1.2E-5", GI_MONEY_LENIENT, true, &m), GI_OK);
    assert_int_equal(m, 12);
    assert_status(gi_money_parse("-0.0000005", GI_MONEY_LENIENT, true, &m), GI_OK);
    assert_int_equal(m, -1);
    assert_status(gi_money_parse("0.0087671233", GI_MONEY_LENIENT, true, &m), GI_OK);
    assert_int_equal(m, 8767);
    assert_status(gi_money_parse("+3.1e2", GI_MONEY_LENIENT, true, &m), GI_OK);
    assert_int_equal(m, 310000000);
    gi_money_format(2500000, 2, buf, sizeof buf);
    assert_string_equal(buf, "2.50");
    gi_money_format(-1, 2, buf, sizeof buf);
    assert_string_equal(buf, "-0.000001");
    gi_money_format(1234500000, 2, buf, sizeof buf);
    assert_string_equal(buf, "1234.50");
    assert_true(gi_currency_ok("USD"));
    assert_false(gi_currency_ok("usd"));
    assert_false(gi_currency_ok("US"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_legacy),
        cmocka_unit_test(test_aws_cur2),
        cmocka_unit_test(test_gcp),
        cmocka_unit_test(test_azure_ea),
        cmocka_unit_test(test_azure_payg_mca),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_money),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
