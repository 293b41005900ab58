/* Unit tests for src/core/util.c: time parsing and formatting, bounded
 * number parsing, bounded copies and the UTF-8 text check. */
#include "unit.h"

#include "core/util.h"

#include <limits.h>
#include <string.h>

/* Parses s and asserts it yields want. */
static void time_ok(const char *s, int64_t want)
{
    int64_t t = -12345;
    if (gi_time_parse(s, &t) != GI_OK)
        fail_msg("gi_time_parse(\"%s\") refused", s);
    if (t != want)
        fail_msg("gi_time_parse(\"%s\") = %lld, want %lld", s, (long long)t, (long long)want);
}

/* Asserts s is refused and the output is left alone. */
static void time_bad(const char *s)
{
    int64_t t = -12345;
    if (gi_time_parse(s, &t) != GI_INVALID)
        fail_msg("gi_time_parse(\"%s\") accepted as %lld", s, (long long)t);
}

static void test_time_parse_utc(void **state)
{
    time_ok("2026-01-02T03:04:05Z", 1767323045);
    time_ok("2026-01-02t03:04:05z", 1767323045);
    time_ok("2026-01-02 03:04:05Z", 1767323045);
    time_ok("1970-01-01T00:00:00Z", 0);
    time_ok("2024-02-29T12:00:00Z", 1709208000); /* leap day */
    time_ok("9999-12-31T23:59:59Z", INT64_C(253402300799));
    /* A leap second is valid RFC 3339 and lands on the next second. */
    time_ok("2016-12-31T23:59:60Z", 1483228800);
}

static void test_time_parse_offsets_and_fractions(void **state)
{
    time_ok("2026-01-02T05:34:05+02:30", 1767323045);
    time_ok("2026-01-01T22:04:05-05:00", 1767323045);
    time_ok("2026-01-02T03:04:05+00:00", 1767323045);
    time_ok("2026-01-02T03:04:05-00:00", 1767323045);
    time_ok("2026-01-02T03:04:05.5Z", 1767323045);
    time_ok("2026-01-02T03:04:05.123456789Z", 1767323045);
    time_ok("2026-01-02T05:34:05.999+02:30", 1767323045);
    /* An offset can carry the instant across a day or year boundary. */
    time_ok("2025-12-31T23:30:00-01:00", 1767227400);
}

static void test_time_parse_unix_seconds(void **state)
{
    time_ok("0", 0);
    time_ok("1767323045", 1767323045);
    time_ok("253402300799", INT64_C(253402300799));
    time_bad("253402300800");
    time_bad("-1");
    time_bad("1767323045.5");
    time_bad(" 1767323045");
    time_bad("1767323045 ");
    time_bad("99999999999999999999999");
}

static void test_time_parse_rejects_garbage(void **state)
{
    static const char *const bad[] = {
        "",
        "now",
        "2026-",
        "2026-01",
        "2026-01-02",
        "2026-01-02T",
        "2026-01-02T03",
        "2026-01-02T03:04",
        "2026-01-02T03:04:05",      /* no zone */
        "2026-01-02T03:04:05ZZ",    /* trailing junk */
        "2026-01-02T03:04:05Z ",    /* trailing space */
        " 2026-01-02T03:04:05Z",    /* leading space */
        "2026-01-02T03:04:05.Z",    /* empty fraction */
        "2026-01-02T03:04:05,5Z",   /* comma fraction */
        "2026-01-02T03:04:05+0230", /* offset without colon */
        "2026-01-02T03:04:05+02",
        "2026-01-02T03:04:05+02:3",
        "2026-1-02T03:04:05Z",
        "2026-01-2T03:04:05Z",
        "2026-01-02T3:04:05Z",
        "2026/01/02T03:04:05Z",
        "2026-01-02X03:04:05Z",
        "20260102T030405Z",
        "2026-01-02T03:04:05UTC",
        "+2026-01-02T03:04:05Z",
        "2026-0a-02T03:04:05Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        time_bad(bad[i]);
}

static void test_time_parse_rejects_out_of_range(void **state)
{
    time_bad("2026-00-10T00:00:00Z");
    time_bad("2026-13-10T00:00:00Z");
    time_bad("2026-01-00T00:00:00Z");
    time_bad("2026-01-32T00:00:00Z");
    time_bad("2026-02-29T00:00:00Z"); /* not a leap year */
    time_bad("2100-02-29T00:00:00Z"); /* century, not a leap year */
    time_bad("2026-02-30T00:00:00Z");
    time_bad("2026-04-31T00:00:00Z");
    time_bad("2026-06-31T00:00:00Z");
    time_bad("2026-09-31T00:00:00Z");
    time_bad("2026-11-31T00:00:00Z");
    time_bad("2026-01-10T24:00:00Z");
    time_bad("2026-01-10T23:60:00Z");
    time_bad("2026-01-10T23:59:61Z");
    time_bad("2026-01-10T00:00:00+24:00");
    time_bad("2026-01-10T00:00:00+02:60");
    /* The instant itself must lie in 1970-9999, whatever the offset. */
    time_bad("1969-12-31T23:59:59Z");
    time_bad("0000-01-01T00:00:00Z");
    time_bad("1970-01-01T00:30:00+01:00");
    time_bad("9999-12-31T23:59:59-00:01");
    time_ok("1970-01-01T01:00:00+01:00", 0);
    time_ok("2000-02-29T00:00:00Z", 951782400); /* divisible by 400: leap */
    time_ok("2026-01-31T00:00:00Z", 1769817600);
    time_ok("2026-01-10T00:00:00+23:59", 1768003200 - 23 * 3600 - 59 * 60);
}

static void test_time_format(void **state)
{
    char buf[32];

    gi_time_format(0, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    gi_time_format(1767323045, buf, sizeof buf);
    assert_string_equal(buf, "2026-01-02T03:04:05Z");
    gi_time_format(INT64_C(253402300799), buf, sizeof buf);
    assert_string_equal(buf, "9999-12-31T23:59:59Z");
    gi_time_format(1709208000, buf, 21); /* the documented minimum */
    assert_string_equal(buf, "2024-02-29T12:00:00Z");
    /* Too small a buffer, or a year past 9999 in the minimum: empty. */
    memset(buf, 'x', sizeof buf);
    gi_time_format(1709208000, buf, 20);
    assert_string_equal(buf, "");
    memset(buf, 'x', sizeof buf);
    gi_time_format(INT64_C(253402300800), buf, 21);
    assert_string_equal(buf, "");
    buf[0] = 'q';
    gi_time_format(0, buf, 0); /* writes nothing */
    assert_int_equal(buf[0], 'q');
}

static void test_time_round_trip(void **state)
{
    /* Literals too large for int get a wider type by themselves. */
    static const int64_t ts[] = {0,         1,          59,         86399,      86400,
                                 951782400, 1709208000, 1767323045, 4102444800, 253402300799};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
        char buf[32];
        int64_t back = -1;
        gi_time_format(ts[i], buf, sizeof buf);
        assert_status(gi_time_parse(buf, &back), GI_OK);
        assert_int_equal(back, ts[i]);
    }
}

static void test_parse_int64(void **state)
{
    int64_t v = 7;

    assert_status(gi_parse_int64("0", 0, 10, &v), GI_OK);
    assert_int_equal(v, 0);
    assert_status(gi_parse_int64("10", 0, 10, &v), GI_OK);
    assert_int_equal(v, 10);
    assert_status(gi_parse_int64("-5", -10, 10, &v), GI_OK);
    assert_int_equal(v, -5);
    assert_status(gi_parse_int64("+5", -10, 10, &v), GI_OK);
    assert_int_equal(v, 5);
    assert_status(gi_parse_int64("007", 0, 10, &v), GI_OK);
    assert_int_equal(v, 7);
    assert_status(gi_parse_int64("9223372036854775807", INT64_MIN, INT64_MAX, &v), GI_OK);
    assert_true(v == INT64_MAX);
    assert_status(gi_parse_int64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), GI_OK);
    assert_true(v == INT64_MIN);

    v = 7;
    assert_status(gi_parse_int64("11", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("-1", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("9223372036854775808", INT64_MIN, INT64_MAX, &v), GI_INVALID);
    assert_status(gi_parse_int64("-9223372036854775809", INT64_MIN, INT64_MAX, &v), GI_INVALID);
    assert_status(gi_parse_int64("99999999999999999999999", INT64_MIN, INT64_MAX, &v), GI_INVALID);
    assert_status(gi_parse_int64("", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64(NULL, 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64(" 5", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("5 ", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("\t5", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("5\n", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("5x", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("0x5", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("5.0", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("1e3", 0, 10000, &v), GI_INVALID);
    assert_status(gi_parse_int64("-", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("+", 0, 10, &v), GI_INVALID);
    assert_status(gi_parse_int64("--5", -10, 10, &v), GI_INVALID);
    assert_int_equal(v, 7); /* untouched on failure */
}

static void test_parse_double(void **state)
{
    double d = 7;

    assert_status(gi_parse_double("0", 0, 10, &d), GI_OK);
    assert_float_equal(d, 0, 0);
    assert_status(gi_parse_double("1.5", 0, 10, &d), GI_OK);
    assert_float_equal(d, 1.5, 0);
    assert_status(gi_parse_double("-2.25", -10, 10, &d), GI_OK);
    assert_float_equal(d, -2.25, 0);
    assert_status(gi_parse_double("1e3", 0, 1e4, &d), GI_OK);
    assert_float_equal(d, 1000, 0);
    assert_status(gi_parse_double(".5", 0, 1, &d), GI_OK);
    assert_float_equal(d, 0.5, 0);
    assert_status(gi_parse_double("10", 0, 10, &d), GI_OK); /* bounds are inclusive */
    assert_float_equal(d, 10, 0);

    d = 7;
    assert_status(gi_parse_double("10.0001", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("-0.5", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double(NULL, 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double(" 1", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("1 ", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("1,5", 0, 10, &d), GI_INVALID); /* C locale only */
    assert_status(gi_parse_double("1.5W", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("nan", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double("NaN", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double("inf", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double("-Infinity", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double("1e400", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double("-1e400", -1e300, 1e300, &d), GI_INVALID);
    assert_status(gi_parse_double(".", 0, 10, &d), GI_INVALID);
    assert_status(gi_parse_double("e5", 0, 10, &d), GI_INVALID);
    assert_float_equal(d, 7, 0); /* untouched on failure */
}

static void test_strlcpy(void **state)
{
    char buf[8];

    memset(buf, 'x', sizeof buf);
    assert_true(gi_strlcpy(buf, "abc", sizeof buf));
    assert_string_equal(buf, "abc");
    assert_true(gi_strlcpy(buf, "1234567", sizeof buf)); /* exactly fits */
    assert_string_equal(buf, "1234567");
    assert_false(gi_strlcpy(buf, "12345678", sizeof buf));
    assert_string_equal(buf, "1234567");
    assert_false(gi_strlcpy(buf, "a much longer string", sizeof buf));
    assert_string_equal(buf, "a much ");
    assert_true(gi_strlcpy(buf, "", sizeof buf));
    assert_string_equal(buf, "");
    assert_false(gi_strlcpy(buf, "a", 1));
    assert_string_equal(buf, "");

    buf[0] = 'q';
    assert_false(gi_strlcpy(buf, "a", 0)); /* writes nothing */
    assert_int_equal(buf[0], 'q');
}

static void test_hex(void **state)
{
    static const unsigned char in[] = {0x00, 0x01, 0xab, 0xff, 0x7f};
    char out[11];

    gi_hex(in, sizeof in, out);
    assert_string_equal(out, "0001abff7f");
    gi_hex(in, 0, out);
    assert_string_equal(out, "");
}

static void test_text_ok_valid(void **state)
{
    assert_true(gi_text_ok(""));
    assert_true(gi_text_ok("plain ASCII, with punctuation!"));
    assert_true(gi_text_ok("tab\tcr\rlf\n"));
    assert_true(gi_text_ok("caf\xc3\xa9"));                          /* U+00E9 */
    assert_true(gi_text_ok("\xc2\x80"));                             /* U+0080, smallest 2-byte */
    assert_true(gi_text_ok("\xdf\xbf"));                             /* U+07FF */
    assert_true(gi_text_ok("\xe0\xa0\x80"));                         /* U+0800, smallest 3-byte */
    assert_true(gi_text_ok("\xe2\x82\xac"));                         /* euro sign */
    assert_true(gi_text_ok("\xed\x9f\xbf"));                         /* U+D7FF, below surrogates */
    assert_true(gi_text_ok("\xee\x80\x80"));                         /* U+E000, above surrogates */
    assert_true(gi_text_ok("\xef\xbf\xbd"));                         /* U+FFFD */
    assert_true(gi_text_ok("\xf0\x90\x80\x80"));                     /* U+10000, smallest 4-byte */
    assert_true(gi_text_ok("\xf0\x9f\x98\x80 GPU"));                 /* emoji */
    assert_true(gi_text_ok("\xf4\x8f\xbf\xbf"));                     /* U+10FFFF, the last */
    assert_true(gi_text_ok("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e")); /* CJK */
}

static void test_text_ok_invalid(void **state)
{
    static const char *const bad[] = {
        "\x01",                 /* C0 control */
        "a\x1b[31m",            /* escape */
        "\x7f",                 /* DEL */
        "\x80",                 /* lone continuation */
        "abc\xbf",              /* lone continuation at the end */
        "\xc0\x80",             /* overlong NUL */
        "\xc1\xbf",             /* overlong 2-byte */
        "\xc3",                 /* truncated 2-byte */
        "\xc3(",                /* bad continuation */
        "\xe0\x80\x80",         /* overlong 3-byte */
        "\xe0\x9f\xbf",         /* overlong 3-byte, largest */
        "\xed\xa0\x80",         /* U+D800, a surrogate */
        "\xed\xbf\xbf",         /* U+DFFF, a surrogate */
        "\xe2\x82",             /* truncated 3-byte */
        "\xe2(\xac",            /* bad continuation */
        "\xf0\x80\x80\x80",     /* overlong 4-byte */
        "\xf0\x8f\xbf\xbf",     /* overlong 4-byte, largest */
        "\xf4\x90\x80\x80",     /* U+110000, past Unicode */
        "\xf5\x80\x80\x80",     /* lead byte past Unicode */
        "\xf8\x88\x80\x80\x80", /* 5-byte form */
        "\xfe",
        "\xff",
        "\xf0\x9f\x98", /* truncated 4-byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (gi_text_ok(bad[i]))
            fail_msg("gi_text_ok accepted bad case %zu", i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_parse_utc),
        cmocka_unit_test(test_time_parse_offsets_and_fractions),
        cmocka_unit_test(test_time_parse_unix_seconds),
        cmocka_unit_test(test_time_parse_rejects_garbage),
        cmocka_unit_test(test_time_parse_rejects_out_of_range),
        cmocka_unit_test(test_time_format),
        cmocka_unit_test(test_time_round_trip),
        cmocka_unit_test(test_parse_int64),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_strlcpy),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_text_ok_valid),
        cmocka_unit_test(test_text_ok_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
