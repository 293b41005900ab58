/* Unit tests for src/core/textbuf.c: the JSON writers give exactly what
 * jansson's compact encoder gives for the same values (strings with every
 * kind of escape, text that is not UTF-8, reals of every shape), the CSV
 * cells are quoted and guarded as the list replies quote them, and the
 * buffer's bound holds. */
#include "unit.h"

#include "core/textbuf.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* v as jansson encodes it, compact (caller frees). */
static char *jansson_text(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    json_decref(v);
    assert_non_null(s);
    return s;
}

static void expect_real(double d)
{
    struct textbuf b = {0};
    char *want = jansson_text(json_real(d));
    size_t len;
    char *got;

    tb_json_real(&b, d);
    got = tb_take(&b, &len);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(got);
    free(want);
}

static void test_reals_as_jansson(void **state)
{
    static const double fixed[] = {
        0.0,  -0.0,   1.0,       -1.0,           0.1,     2.5,     123.456789, 1e20, 1e21,
        1e-7, 1.5e-7, -3.25e-12, 1e300,          DBL_MIN, DBL_MAX, 86400.0,    1e15, 1e16,
        1e17, 0.3,    46.666667, 1234567.891011, 1e-5,    5e-324};
    uint64_t x = 0x9E3779B97F4A7C15ull;

    (void)state;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        expect_real(fixed[i]);
    /* rounded figures as the reports make them, and random bit patterns */
    for (int i = 0; i < 2000; i++) {
        double d;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d = round((double)(x % 100000000000ull) / 3600.0 * 1e6) / 1e6;
        expect_real(d);
        memcpy(&d, &x, sizeof d);
        if (isfinite(d))
            expect_real(d);
    }
}

static void test_strings_as_jansson(void **state)
{
    static const char *const texts[] = {"",
                                        "team-7",
                                        "a \"quoted\" name",
                                        "back\\slash",
                                        "tab\tnew\nline\rcr",
                                        "\x01\x1f\x7f",
                                        "bell\b form\f",
                                        "slash / stays",
                                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80",
                                        "<script>&"};
    struct textbuf b = {0};
    size_t len;
    char *got;

    (void)state;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *want = jansson_text(json_string(texts[i]));
        assert_true(tb_json_str(&b, texts[i]));
        got = tb_take(&b, &len);
        assert_string_equal(got, want);
        free(got);
        free(want);
    }
    /* Not UTF-8: jansson makes no string, so nothing is written. */
    assert_false(tb_json_str(&b, "bad \xff byte"));
    assert_false(tb_json_str(&b, "cut \xe2\x82"));
    assert_int_equal(b.len, 0);
    /* NULL is null. */
    assert_true(tb_json_str(&b, NULL));
    got = tb_take(&b, &len);
    assert_string_equal(got, "null");
    free(got);
}

static void test_csv_cells(void **state)
{
    struct textbuf b = {0};
    size_t len;
    char *got;

    (void)state;
    tb_csv_cell(&b, "plain", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "a,b", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "say \"hi\"", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "two\nlines", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "=SUM(A1)", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "-12.00", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "''+x", true);
    tb_put(&b, "|", 1);
    tb_csv_cell(&b, "-12", false); /* a number: no guard */
    tb_put(&b, "|", 1);
    tb_csv_real(&b, 0.1);
    tb_put(&b, "|", 1);
    tb_csv_real(&b, 1.0 / 3.0);
    tb_put(&b, "|", 1);
    tb_csv_real(&b, 2.5);
    got = tb_take(&b, &len);
    assert_string_equal(got, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"'=SUM(A1)\"|"
                             "\"'-12.00\"|\"'''+x\"|-12|0.1|0.3333333333333333|2.5");
    free(got);
}

static void test_bound(void **state)
{
    struct textbuf b = {.max = 10};
    size_t len = 99;

    (void)state;
    tb_puts(&b, "0123456789");
    assert_false(b.failed);
    tb_put(&b, "x", 1);
    assert_true(b.failed);
    tb_puts(&b, "more"); /* ignored */
    assert_null(tb_take(&b, &len));
    assert_int_equal(len, 0);
    /* An empty buffer gives empty text; free accepts an empty buffer. */
    b = (struct textbuf){0};
    char *got = tb_take(&b, &len);
    assert_string_equal(got, "");
    free(got);
    tb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reals_as_jansson),
        cmocka_unit_test(test_strings_as_jansson),
        cmocka_unit_test(test_csv_cells),
        cmocka_unit_test(test_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
