/* Prometheus text exposition and HTTP API parsers: fixtures parse to
 * exact samples; malformed input fails on the right line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/promapi.h"
#include "parse/promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An owned copy of one delivered sample. */
struct got {
    char name[128];
    size_t nlabels;
    char lname[16][64];
    char lvalue[16][128]; /* truncated copies */
    size_t lvlen[16];     /* full lengths */
    double value;
    bool has_ts;
    int64_t ts_ms;
    enum prom_type type;
    size_t line;
};

struct sink {
    struct got s[512];
    size_t n;
    size_t stop_at; /* reject the sample with this 1-based number; 0 never */
};

static int collect(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    struct sink *k = ctx;
    struct got *g;

    assert_true(k->n < sizeof k->s / sizeof *k->s);
    if (k->stop_at && k->n + 1 == k->stop_at) {
        snprintf(err->msg, sizeof err->msg, "no more, thanks");
        return GI_CONFLICT;
    }
    g = &k->s[k->n++];
    memset(g, 0, sizeof *g);
    assert_true(strlen(s->name) < sizeof g->name);
    strncat(g->name, s->name, sizeof g->name - 1);
    assert_true(s->nlabels <= 16);
    g->nlabels = s->nlabels;
    for (size_t i = 0; i < s->nlabels; i++) {
        assert_true(strlen(s->labels[i].name) < sizeof g->lname[i]);
        g->lvlen[i] = strlen(s->labels[i].value);
        strncat(g->lname[i], s->labels[i].name, sizeof g->lname[i] - 1);
        strncat(g->lvalue[i], s->labels[i].value, sizeof g->lvalue[i] - 1);
    }
    g->value = s->value;
    g->has_ts = s->has_ts;
    g->ts_ms = s->ts_ms;
    g->type = s->type;
    g->line = err->line;
    return GI_OK;
}

static char *fixture(const char *name, size_t *len) { return unit_fixture("prom", name, len); }

static int parse_str(const char *text, struct sink *k, struct prom_error *err)
{
    memset(k, 0, sizeof *k);
    return prom_parse_text(text, strlen(text), collect, k, err);
}

static const char *label(const struct got *g, const char *name)
{
    for (size_t i = 0; i < g->nlabels; i++)
        if (strcmp(g->lname[i], name) == 0)
            return g->lvalue[i];
    return NULL;
}

/* Parses text expecting failure st at line; the message names it. */
static void expect_error(const char *text, int st, size_t line, const char *why)
{
    static struct sink k;
    struct prom_error err;
    char prefix[32];

    assert_int_equal(parse_str(text, &k, &err), st);
    assert_int_equal(err.line, line);
    snprintf(prefix, sizeof prefix, "line %zu: ", line);
    assert_memory_equal(err.msg, prefix, strlen(prefix));
    if (strstr(err.msg, why) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.msg, why);
}

static void test_edge_cases_fixture(void **state)
{
    static struct sink k;
    struct prom_error err;
    size_t len;
    char *text = fixture("text_edge_cases.prom", &len);

    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, len, collect, &k, &err), GI_OK);
    assert_string_equal(err.msg, "");
    assert_int_equal(k.n, 15);

    assert_string_equal(k.s[0].name, "http_requests_total");
    assert_int_equal(k.s[0].type, PROM_COUNTER);
    assert_int_equal(k.s[0].nlabels, 2);
    assert_string_equal(k.s[0].lname[0], "method");
    assert_string_equal(k.s[0].lvalue[0], "post");
    assert_string_equal(k.s[0].lvalue[1], "200");
    assert_true(k.s[0].value == 1027.0);
    assert_true(k.s[0].has_ts);
    assert_int_equal(k.s[0].ts_ms, INT64_C(1395066363000));
    assert_int_equal(k.s[0].line, 4);
    /* Runs of blanks between tokens. */
    assert_true(k.s[1].value == 3.0);
    assert_int_equal(k.s[1].ts_ms, INT64_C(1395066363000));

    /* Escapes: \\ \" \n. */
    assert_string_equal(k.s[2].name, "msdos_file_access_time_seconds");
    assert_string_equal(label(&k.s[2], "path"), "C:\\DIR\\FILE.TXT");
    assert_string_equal(label(&k.s[2], "error"), "Cannot find file:\n\"FILE.TXT\"");
    assert_true(k.s[2].value == 1.458255915e9);
    assert_false(k.s[2].has_ts);
    assert_int_equal(k.s[2].type, PROM_UNTYPED);

    assert_string_equal(k.s[3].name, "metric_without_timestamp_and_labels");
    assert_int_equal(k.s[3].nlabels, 0);
    assert_true(k.s[3].value == 12.47);

    /* +Inf with a negative timestamp. */
    assert_true(isinf(k.s[4].value) && k.s[4].value > 0);
    assert_int_equal(k.s[4].ts_ms, -3982045);

    assert_string_equal(k.s[5].name, "nan_gauge");
    assert_true(isnan(k.s[5].value));
    assert_int_equal(k.s[5].type, PROM_GAUGE);
    assert_true(isinf(k.s[6].value) && k.s[6].value < 0);
    assert_int_equal(k.s[6].type, PROM_UNTYPED);

    /* Histogram series take the family's type. */
    for (int i = 7; i <= 10; i++)
        assert_int_equal(k.s[i].type, PROM_HISTOGRAM);
    assert_string_equal(label(&k.s[8], "le"), "+Inf");
    assert_true(k.s[9].value == 53423.0);

    /* Trailing comma; tabs everywhere. */
    assert_string_equal(k.s[11].name, "trailing_comma");
    assert_int_equal(k.s[11].nlabels, 1);
    assert_string_equal(label(&k.s[11], "a"), "1");
    assert_string_equal(k.s[12].name, "tabs");
    assert_int_equal(k.s[12].nlabels, 2);
    assert_string_equal(label(&k.s[12], "a"), "x");
    assert_string_equal(label(&k.s[12], "b"), "y");
    assert_true(k.s[12].value == 2.0);
    assert_int_equal(k.s[12].ts_ms, 5);
    assert_int_equal(k.s[12].type, PROM_UNTYPED);

    assert_string_equal(label(&k.s[13], "name"), "Gr\xc3\xbc\xc3\x9f"
                                                 "e \xe2\x98\x83");
    assert_string_equal(label(&k.s[13], "empty"), "");
    assert_true(k.s[14].value == 1.5e-3);
    free(text);
}

static void test_dcgm_fixture_samples(void **state)
{
    static struct sink k;
    struct prom_error err;
    size_t len;
    char *text = fixture("dcgm_formats_sample.prom", &len);

    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, len, collect, &k, &err), GI_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.s[0].name, "DCGM_FI_DEV_SM_CLOCK");
    assert_int_equal(k.s[0].nlabels, 11);
    assert_string_equal(label(&k.s[0], "UUID"), "GPU-06357e72-c3ee-614b-775f-a89e18e8cc08");
    assert_string_equal(label(&k.s[0], "GPU_I_PROFILE"), "7g.79gb");
    assert_string_equal(label(&k.s[0], "pod"), "");
    assert_true(k.s[0].value == 1410.0);
    assert_string_equal(k.s[1].name, "DCGM_FI_DEV_FB_FREE");
    assert_string_equal(label(&k.s[1], "hostname"), "dcgm-exporter-wwwjh");
    assert_string_equal(label(&k.s[1], "pod"), "triton-server-f7cb5d77-95xcf");
    assert_true(k.s[1].value == 2207.0);
    free(text);

    /* Older output: a blank after every comma. */
    text = fixture("dcgm_old_spaces.prom", &len);
    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, len, collect, &k, &err), GI_OK);
    assert_int_equal(k.n, 12);
    assert_int_equal(k.s[0].nlabels, 6);
    assert_string_equal(label(&k.s[0], "uuid"), "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52");
    assert_string_equal(label(&k.s[0], "container_name"), "trainer");
    assert_true(k.s[4].value == 247.382);
    assert_int_equal(k.s[4].type, PROM_GAUGE);
    free(text);

    /* CRLF line ends. */
    text = fixture("dcgm_crlf.prom", &len);
    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, len, collect, &k, &err), GI_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(label(&k.s[0], "Hostname"), "win-gw");
    assert_true(k.s[0].value == 48.0);
    assert_int_equal(k.s[1].line, 4);
    assert_true(k.s[1].value == 12.0);
    free(text);
}

static void test_a100_fixture_counts(void **state)
{
    static struct sink k;
    struct prom_error err;
    size_t len;
    char *text = fixture("dcgm_a100_8gpu.prom", &len);

    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, len, collect, &k, &err), GI_OK);
    assert_int_equal(k.n, 25 * 8);
    /* DCGM_FI_DEV_POWER_USAGE for gpu 3, printed with 6 decimals. */
    assert_string_equal(k.s[4 * 8 + 3].name, "DCGM_FI_DEV_POWER_USAGE");
    assert_string_equal(label(&k.s[4 * 8 + 3], "gpu"), "3");
    assert_true(k.s[4 * 8 + 3].value == 173.144);
    assert_int_equal(k.s[5 * 8].type, PROM_COUNTER);
    free(text);
}

static void test_values(void **state)
{
    static const struct {
        const char *in;
        double want;
    } ok[] = {{"0", 0},
              {"-0.5", -0.5},
              {"+12", 12},
              {"1e3", 1000},
              {"1E-2", 0.01},
              {".5", 0.5},
              {"5.", 5},
              {"123456789012345", 123456789012345.0},
              {"9223372036854775794", 9223372036854775794.0},
              {"0.1", 0.1},
              {"2.675", 2.675},
              {"1.7976931348623157e308", 1.7976931348623157e308},
              {"1e999", HUGE_VAL},
              {"Infinity", HUGE_VAL},
              {"inf", HUGE_VAL}};
    static const char *const bad[] = {"",    "abc", "1.2.3", "0x10", "1e",  "nan(1)", "--1",
                                      "1 2", "+",   ".",     "1,5",  "\v5", "\r5",    "5\r"};
    double v;

    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(prom_parse_value(ok[i].in, strlen(ok[i].in), &v), 0);
        assert_true(v == ok[i].want);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (prom_parse_value(bad[i], strlen(bad[i]), &v) == 0)
            fail_msg("accepted \"%s\"", bad[i]);
    assert_int_equal(prom_parse_value("NaN", 3, &v), 0);
    assert_true(isnan(v));
    assert_int_equal(prom_parse_value("+Inf", 4, &v), 0);
    assert_true(isinf(v) && v > 0);
    assert_int_equal(prom_parse_value("-Inf", 4, &v), 0);
    assert_true(isinf(v) && v < 0);
    /* Only the given bytes count. */
    assert_int_equal(prom_parse_value("42 ", 2, &v), 0);
    assert_true(v == 42.0);
}

static void test_malformed(void **state)
{
    expect_error("ok 1\nbad{a=\"x} 1\n", GI_INVALID, 2, "unterminated label value");
    expect_error("ok 1\nok 2\nbad{a=\"x\\q\"} 1\n", GI_INVALID, 3, "invalid escape");
    expect_error("bad{a=\"x\\", GI_INVALID, 1, "unterminated label value");
    expect_error("# TYPE a gauge\na 1\na 1x\n", GI_INVALID, 3, "invalid value \"1x\"");
    expect_error("a{b=\"c\"}\n", GI_INVALID, 1, "missing value");
    expect_error("a\n", GI_INVALID, 1, "missing value");
    expect_error("a 1 1.5\n", GI_INVALID, 1, "invalid timestamp");
    expect_error("a 1 2 3\n", GI_INVALID, 1, "unexpected text after the timestamp");
    expect_error("a{b=\"c\" d=\"e\"} 1\n", GI_INVALID, 1, "expected ',' or '}'");
    expect_error("a{b=c} 1\n", GI_INVALID, 1, "expected '\"'");
    expect_error("a{b} 1\n", GI_INVALID, 1, "expected '='");
    expect_error("a{,} 1\n", GI_INVALID, 1, "expected a label name");
    expect_error("a{b=\"c\"\n", GI_INVALID, 1, "unterminated label set");
    expect_error("a{b=\"c\",,} 1\n", GI_INVALID, 1, "expected a label name");
    expect_error("\n\n1a 1\n", GI_INVALID, 3, "expected a metric name");
    expect_error("a-b 1\n", GI_INVALID, 1, "unexpected character \"-\"");
    expect_error("a{b:c=\"d\"} 1\n", GI_INVALID, 1, "expected '='");
    expect_error("a{b=\"\xff\"} 1\n", GI_INVALID, 1, "invalid UTF-8");
    expect_error("# TYPE a gaugeish\n", GI_INVALID, 1, "unknown metric type");
    expect_error("# TYPE a\n", GI_INVALID, 1, "missing metric type");
    expect_error("# TYPE\ta gauge extra\n", GI_INVALID, 1, "unexpected text after the metric type");
    expect_error("x 1\r\ny 2\r\nz\r\n", GI_INVALID, 3, "missing value");

    /* NUL inside a label value. */
    {
        static struct sink k;
        struct prom_error err;
        static const char nul[] = "a{b=\"x\0y\"} 1\n";
        memset(&k, 0, sizeof k);
        assert_int_equal(prom_parse_text(nul, sizeof nul - 1, collect, &k, &err), GI_INVALID);
        assert_int_equal(err.line, 1);
        assert_non_null(strstr(err.msg, "NUL byte"));
    }
}

static void test_bounds(void **state)
{
    static struct sink k;
    struct prom_error err;
    size_t n = PROM_MAX_LINE + 100;
    char *text = malloc(n + 64);
    size_t o;

    assert_non_null(text);
    /* An over-long line on line 3. */
    o = (size_t)snprintf(text, 64, "a 1\n# x\nb{c=\"");
    memset(text + o, 'v', n);
    o += n;
    memcpy(text + o, "\"} 1\n", 6);
    memset(&k, 0, sizeof k);
    assert_int_equal(prom_parse_text(text, strlen(text), collect, &k, &err), GI_TOO_LARGE);
    assert_int_equal(err.line, 3);
    assert_non_null(strstr(err.msg, "line 3: line longer than"));
    assert_int_equal(k.n, 1);

    /* A label value over its own bound, inside an allowed line. */
    o = (size_t)snprintf(text, 64, "b{c=\"");
    memset(text + o, 'v', PROM_MAX_VALUE + 1);
    o += PROM_MAX_VALUE + 1;
    memcpy(text + o, "\"} 1\n", 6);
    assert_int_equal(parse_str(text, &k, &err), GI_TOO_LARGE);
    assert_int_equal(err.line, 1);
    assert_non_null(strstr(err.msg, "label value longer than"));

    /* Exactly PROM_MAX_VALUE after unescaping is fine. */
    o = (size_t)snprintf(text, 64, "b{c=\"\\n");
    memset(text + o, 'v', PROM_MAX_VALUE - 1);
    o += PROM_MAX_VALUE - 1;
    memcpy(text + o, "\"} 1\n", 6);
    assert_int_equal(parse_str(text, &k, &err), GI_OK);
    assert_int_equal(k.n, 1);
    assert_int_equal(k.s[0].lvlen[0], PROM_MAX_VALUE);
    assert_int_equal(k.s[0].lvalue[0][0], '\n');

    /* Too many labels. */
    o = (size_t)snprintf(text, 64, "m{");
    for (int i = 0; i <= PROM_MAX_LABELS; i++)
        o += (size_t)snprintf(text + o, 32, "l%d=\"\",", i);
    memcpy(text + o, "} 1\n", 5);
    assert_int_equal(parse_str(text, &k, &err), GI_TOO_LARGE);
    assert_non_null(strstr(err.msg, "more than 128 labels"));

    /* An over-long metric name. */
    memset(text, 'm', PROM_MAX_NAME + 1);
    memcpy(text + PROM_MAX_NAME + 1, " 1\n", 4);
    assert_int_equal(parse_str(text, &k, &err), GI_TOO_LARGE);
    assert_non_null(strstr(err.msg, "metric name longer"));
    free(text);
}

static void test_consumer_stop_and_edges(void **state)
{
    static struct sink k;
    struct prom_error err;

    memset(&k, 0, sizeof k);
    k.stop_at = 2;
    assert_int_equal(prom_parse_text("a 1\n\nb 2\nc 3\n", 12, collect, &k, &err), GI_CONFLICT);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.msg, "line 3: no more, thanks");
    assert_int_equal(k.n, 1);

    /* Empty input, comments only, no final newline, NULL err. */
    assert_int_equal(parse_str("", &k, &err), GI_OK);
    assert_int_equal(k.n, 0);
    assert_int_equal(parse_str("# just a comment\n#\n   \n\t\n", &k, NULL), GI_OK);
    assert_int_equal(k.n, 0);
    assert_int_equal(parse_str("a 1", &k, &err), GI_OK);
    assert_int_equal(k.n, 1);
    /* A blank between name and label set, and around '='. */
    assert_int_equal(parse_str("a {b = \"c\"} 1\n", &k, &err), GI_OK);
    assert_string_equal(label(&k.s[0], "b"), "c");
    /* Empty label set. */
    assert_int_equal(parse_str("a{} 1\n", &k, &err), GI_OK);
    assert_int_equal(k.s[0].nlabels, 0);
    /* The TYPE of one family does not leak to another. */
    assert_int_equal(
        parse_str("# TYPE a counter\na 1\nab 2\n# TYPE c summary\nc_sum 1\nc_x 1\n", &k, &err),
        GI_OK);
    assert_int_equal(k.s[0].type, PROM_COUNTER);
    assert_int_equal(k.s[1].type, PROM_UNTYPED);
    assert_int_equal(k.s[2].type, PROM_SUMMARY);
    assert_int_equal(k.s[3].type, PROM_UNTYPED);
    assert_string_equal(prom_type_name(PROM_SUMMARY), "summary");
}

/* ---- HTTP API ---- */

static int parse_api_file(const char *name, struct sink *k, struct prom_error *err)
{
    size_t len;
    char *text = fixture(name, &len);
    int rc;

    memset(k, 0, sizeof *k);
    rc = promapi_parse(text, len, collect, k, err);
    free(text);
    return rc;
}

static int parse_api_str(const char *text, struct sink *k, struct prom_error *err)
{
    memset(k, 0, sizeof *k);
    return promapi_parse(text, strlen(text), collect, k, err);
}

static void test_api_vector(void **state)
{
    static struct sink k;
    struct prom_error err;

    assert_int_equal(parse_api_file("api_vector.json", &k, &err), GI_OK);
    assert_string_equal(err.msg, "");
    assert_int_equal(k.n, 4);
    assert_string_equal(k.s[0].name, "DCGM_FI_DEV_GPU_UTIL");
    assert_int_equal(k.s[0].nlabels, 12); /* __name__ is not a label */
    assert_null(label(&k.s[0], "__name__"));
    assert_string_equal(label(&k.s[0], "UUID"), "GPU-5a1c0d00-1b2c-3d4e-8f70-9a8b7c6d5e40");
    assert_string_equal(label(&k.s[0], "pod"), "resnet-train-0");
    assert_true(k.s[0].value == 87.0);
    assert_true(k.s[0].has_ts);
    assert_int_equal(k.s[0].ts_ms, INT64_C(1717171717123));
    assert_int_equal(k.s[0].type, PROM_UNTYPED);
    assert_true(isnan(k.s[1].value));
    assert_true(k.s[3].value == 19913.0);
}

static void test_api_matrix_scalar(void **state)
{
    static struct sink k;
    struct prom_error err;

    assert_int_equal(parse_api_file("api_matrix.json", &k, &err), GI_OK);
    assert_int_equal(k.n, 6);
    assert_string_equal(k.s[0].name, "DCGM_FI_DEV_GPU_TEMP");
    assert_int_equal(k.s[0].ts_ms, INT64_C(1717000000000));
    assert_true(k.s[2].value == 44.0);
    assert_int_equal(k.s[2].ts_ms, INT64_C(1717000030000));
    assert_string_equal(label(&k.s[3], "gpu"), "1");
    assert_true(isinf(k.s[4].value));
    assert_int_equal(k.s[5].ts_ms, INT64_C(1717000030500));

    assert_int_equal(parse_api_file("api_scalar.json", &k, &err), GI_OK);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.s[0].name, "");
    assert_int_equal(k.s[0].nlabels, 0);
    assert_true(k.s[0].value == 8.0);
    assert_int_equal(k.s[0].ts_ms, INT64_C(1717171717500));
}

static void test_api_errors(void **state)
{
    static struct sink k;
    struct prom_error err;

    assert_int_equal(parse_api_file("api_error.json", &k, &err), GI_INVALID);
    assert_string_equal(err.api_type, "bad_data");
    assert_non_null(strstr(err.msg, "unexpected right parenthesis"));
    assert_int_equal(k.n, 0);
    assert_int_equal(parse_api_file("api_error_timeout.json", &k, &err), GI_UNAVAILABLE);
    assert_string_equal(err.api_type, "timeout");
    assert_non_null(strstr(err.msg, "query timed out"));
    assert_int_equal(parse_api_str("{\"status\":\"error\",\"errorType\":\"not_found\"}", &k, &err),
                     GI_NOT_FOUND);

    assert_int_equal(parse_api_str("{\"status\":\"success\",\n\"data\":[", &k, &err), GI_INVALID);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "invalid JSON"));
    assert_int_equal(parse_api_str("[]", &k, &err), GI_INVALID);
    assert_int_equal(parse_api_str("{\"data\":{}}", &k, &err), GI_INVALID);
    assert_non_null(strstr(err.msg, "status"));
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"string\","
                                   "\"result\":[1,\"x\"]}}",
                                   &k, &err),
                     GI_INVALID);
    assert_non_null(strstr(err.msg, "carries no samples"));
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                   "\"result\":[{\"metric\":{},\"value\":[1,\"2\"]},"
                                   "{\"metric\":{\"a\":1},\"value\":[1,\"2\"]}]}}",
                                   &k, &err),
                     GI_INVALID);
    assert_string_equal(err.msg, "data.result[1]: label \"a\" is not a string");
    assert_int_equal(k.n, 1);
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                   "\"result\":[{\"metric\":{},\"value\":[1,\"abc\"]}]}}",
                                   &k, &err),
                     GI_INVALID);
    assert_string_equal(err.msg, "data.result[0].value: invalid value \"abc\"");
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
                                   "\"result\":[{\"metric\":{},"
                                   "\"values\":[[1,\"2\"],[\"x\",\"2\"]]}]}}",
                                   &k, &err),
                     GI_INVALID);
    assert_string_equal(err.msg, "data.result[0].values[1]: time is not a number");
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                   "\"result\":[{\"metric\":{},\"value\":[1,2]}]}}",
                                   &k, &err),
                     GI_INVALID);
    assert_string_equal(err.msg, "data.result[0].value: value is not a string");
    /* Native histograms are skipped. */
    assert_int_equal(parse_api_str("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                   "\"result\":[{\"metric\":{},\"histogram\":[1,{}]}]}}",
                                   &k, &err),
                     GI_OK);
    assert_int_equal(k.n, 0);
    /* The consumer's refusal comes back with the item. */
    static const char scalar[] =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"2\"]}}";
    memset(&k, 0, sizeof k);
    k.stop_at = 1;
    assert_int_equal(promapi_parse(scalar, sizeof scalar - 1, collect, &k, &err), GI_CONFLICT);
    assert_string_equal(err.msg, "data.result: no more, thanks");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_cases_fixture),
        cmocka_unit_test(test_dcgm_fixture_samples),
        cmocka_unit_test(test_a100_fixture_counts),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_consumer_stop_and_edges),
        cmocka_unit_test(test_api_vector),
        cmocka_unit_test(test_api_matrix_scalar),
        cmocka_unit_test(test_api_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
