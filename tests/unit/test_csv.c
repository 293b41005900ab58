/* Unit tests for src/parse/csv.c, the RFC 4180 reader: quoting, line ends,
 * byte-order mark, empty fields, line numbers of records, malformed input
 * and the size bounds. */
#include "unit.h"

#include "parse/csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads all of data and renders it as "L<line>:f1|f2|…" records joined by
 * newlines (fields with a newline or '|' show as-is; tests avoid '|').
 * Ends with "!<line>:<error>" when the reader fails. Caller frees. */
static char *render(const char *data, size_t len)
{
    struct csv c;
    size_t cap = 4 * len + 256, n = 0;
    char *out = calloc(1, cap);
    int rc;

    assert_non_null(out);
    csv_init(&c, data, len);
    while ((rc = csv_next(&c)) == 1) {
        n += (size_t)snprintf(out + n, cap - n, "%sL%zu:", n ? "\n" : "", c.record_line);
        for (size_t i = 0; i < c.nfields; i++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "|" : "", c.fields[i]);
        assert_true(n < cap);
    }
    if (rc < 0)
        snprintf(out + n, cap - n, "%s!%zu:%s", n ? "\n" : "", c.record_line, c.error);
    else
        assert_int_equal(csv_next(&c), 0); /* the end is sticky */
    csv_free(&c);
    return out;
}

#define expect_csv(data, want)                                                                     \
    do {                                                                                           \
        char *got_ = render(data, sizeof(data) - 1);                                               \
        if (strcmp(got_, want) != 0) {                                                             \
            print_error("input:\n%s\ngot:\n%s\nwant:\n%s\n", data, got_, want);                    \
            free(got_);                                                                            \
            fail();                                                                                \
        }                                                                                          \
        free(got_);                                                                                \
    } while (0)

static void test_plain(void **state)
{
    expect_csv("a,b,c\n1,2,3\n", "L1:a|b|c\nL2:1|2|3");
    expect_csv("a,b,c\n1,2,3", "L1:a|b|c\nL2:1|2|3"); /* no final newline */
    expect_csv("one\n", "L1:one");
    expect_csv("one", "L1:one");
    expect_csv("", "");
    expect_csv(" spaced , kept ", "L1: spaced | kept "); /* no trimming */
}

static void test_line_ends(void **state)
{
    expect_csv("a,b\r\n1,2\r\n", "L1:a|b\nL2:1|2");
    expect_csv("a,b\r\n1,2", "L1:a|b\nL2:1|2");
    expect_csv("a,b\n1,2\r\n3,4\n", "L1:a|b\nL2:1|2\nL3:3|4"); /* mixed */
    expect_csv("a\rb\r", "L1:a\nL2:b");                        /* bare CR ends a record */
}

static void test_bom(void **state)
{
    expect_csv("\xEF\xBB\xBFname,kind\nx,server\n", "L1:name|kind\nL2:x|server");
    expect_csv("\xEF\xBB\xBF", "");
    expect_csv("\xEF\xBB\xBF\"q\"\n", "L1:q");
    /* Only a leading mark is special. */
    expect_csv("a\n\xEF\xBB\xBF\x62\n", "L1:a\nL2:\xEF\xBB\xBF\x62"); /* \x62 is 'b' */
    /* A cut-short mark is not UTF-8. */
    expect_csv("\xEF\xBB", "!1:invalid UTF-8 at byte 1 of field 1");
}

static void test_empty_fields(void **state)
{
    expect_csv(",,\n", "L1:||");
    expect_csv("a,\n", "L1:a|");
    expect_csv(",a\n", "L1:|a");
    expect_csv("a,", "L1:a|");
    expect_csv("\"\",\"\"\n", "L1:|");
    /* A blank line is a record of one empty field; callers skip it. */
    expect_csv("a\n\nb\n", "L1:a\nL2:\nL3:b");
    expect_csv("\n", "L1:");
    expect_csv("\r\n\r\n", "L1:\nL2:");
}

static void test_quoted(void **state)
{
    expect_csv("\"a,b\",c\n", "L1:a,b|c");
    expect_csv("\"say \"\"hi\"\"\",x\n", "L1:say \"hi\"|x");
    expect_csv("\"\"\"\"\n", "L1:\"");
    expect_csv("\"\"\"\"\"\"\n", "L1:\"\"");
    expect_csv("\"a\"\r\n\"b\"", "L1:a\nL2:b");
    expect_csv("x,\"\"\n", "L1:x|");
    expect_csv("\"caf\xc3\xa9\",\"\xe6\x97\xa5\"\n", "L1:caf\xc3\xa9|\xe6\x97\xa5");
    /* nvidia-smi process names with commas come unquoted; they split. */
    expect_csv("12249, /root/a,b\n", "L1:12249| /root/a|b");
}

static void test_embedded_newlines(void **state)
{
    expect_csv("h1,h2\n\"line one\nline two\",x\nnext,y\n",
               "L1:h1|h2\nL2:line one\nline two|x\nL4:next|y");
    expect_csv("\"a\r\nb\",c\r\nd,e\r\n", "L1:a\r\nb|c\nL3:d|e");
    expect_csv("\"\n\n\n\"\nz\n", "L1:\n\n\n\nL5:z");
    expect_csv("a\n\"x\ny\",\"p\nq\"\nb\n", "L1:a\nL2:x\ny|p\nq\nL5:b");
}

static void test_malformed(void **state)
{
    expect_csv("\"open", "!1:unterminated quoted field");
    expect_csv("a\nb\n\"open\nstill open", "L1:a\nL2:b\n!3:unterminated quoted field");
    expect_csv("ab\"c\n", "!1:quote inside an unquoted field");
    expect_csv("x\n\"a\"b\n", "L1:x\n!2:unexpected character after a closing quote");
    expect_csv("\"a\" ,b\n", "!1:unexpected character after a closing quote");
    expect_csv("\"a\"\"\n", "!1:unterminated quoted field");
    /* A broken record after a multi-line one reports its own start line. */
    expect_csv("\"1\n2\n3\"\nbad\"\n", "L1:1\n2\n3\n!4:quote inside an unquoted field");
}

static void test_embedded_nul(void **state)
{
    /* Length, not NUL, ends the input; a NUL is refused, not a truncation. */
    static const char data[] = "a\0b,c\n";
    static const char quoted[] = "h\nx,\"p\nq\0\"\n";
    char *got = render(data, sizeof data - 1);
    assert_string_equal(got, "!1:a NUL byte at byte 2 of field 1");
    free(got);
    got = render(quoted, sizeof quoted - 1);
    assert_string_equal(got, "L1:h\n!2:a NUL byte at byte 4 of field 2");
    free(got);
}

/* Reads data to its end, going on after resumable errors; renders records
 * as "L<line>:f1|f2" and errors as "!<line>.<field>:<error>". */
static char *render_all(const char *data, size_t len)
{
    struct csv c;
    size_t cap = 4 * len + 512, n = 0;
    char *out = calloc(1, cap);
    int rc;

    assert_non_null(out);
    csv_init(&c, data, len);
    while ((rc = csv_next(&c)) != 0) {
        if (rc < 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s!%zu.%zu:%s", n ? "\n" : "", c.error_line,
                                  c.error_field, c.error);
            if (!c.resumable)
                break;
            continue;
        }
        n += (size_t)snprintf(out + n, cap - n, "%sL%zu:", n ? "\n" : "", c.record_line);
        for (size_t i = 0; i < c.nfields; i++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "|" : "", c.fields[i]);
        assert_true(n < cap);
    }
    csv_free(&c);
    return out;
}

#define expect_all(data, want)                                                                     \
    do {                                                                                           \
        char *got_ = render_all(data, sizeof(data) - 1);                                           \
        if (strcmp(got_, want) != 0) {                                                             \
            print_error("input:\n%s\ngot:\n%s\nwant:\n%s\n", data, got_, want);                    \
            free(got_);                                                                            \
            fail();                                                                                \
        }                                                                                          \
        free(got_);                                                                                \
    } while (0)

static void test_invalid_utf8(void **state)
{
    /* Latin-1 from a spreadsheet: the record is refused at its line and
     * field, and the records after it still read. */
    expect_all("name,city\nx,M\xfcnchen\ny,Paris\n",
               "L1:name|city\n!2.2:invalid UTF-8 at byte 2 of field 2\nL3:y|Paris");
    /* Each malformed form: lone continuation, overlong, surrogate, past
     * U+10FFFF, cut short at the field's end, cut short by a comma. */
    expect_all("\x80\n", "!1.1:invalid UTF-8 at byte 1 of field 1");
    expect_all("a,\xc0\xaf\n", "!1.2:invalid UTF-8 at byte 1 of field 2");
    expect_all("\xed\xa0\x80\n", "!1.1:invalid UTF-8 at byte 1 of field 1");
    expect_all("\xf4\x90\x80\x80\n", "!1.1:invalid UTF-8 at byte 1 of field 1");
    expect_all("ok\xe6\x97", "!1.1:invalid UTF-8 at byte 3 of field 1");
    expect_all("\xe6\x97,x\n", "!1.1:invalid UTF-8 at byte 1 of field 1");
    /* The line of the bad byte inside a multi-line quoted field. */
    expect_all("h\n\"one\ntwo \xff\",z\nw\n",
               "L1:h\n!3.1:invalid UTF-8 at byte 9 of field 1\nL4:w");
    /* Only the first bad byte of a record is named. */
    expect_all("\xff,\xfe\n", "!1.1:invalid UTF-8 at byte 1 of field 1");
    /* Well-formed: two-, three- and four-byte forms and the extremes. */
    expect_all("\xc2\x80,\xe0\xa0\x80,\xef\xbf\xbf,\xf0\x90\x80\x80,\xf4\x8f\xbf\xbf\n",
               "L1:\xc2\x80|\xe0\xa0\x80|\xef\xbf\xbf|\xf0\x90\x80\x80|\xf4\x8f\xbf\xbf");
    /* A structural error after an encoding error in one record ends reading. */
    expect_all("\xff,\"open\n", "!2.2:unterminated quoted field");
}

static void test_field_count_bound(void **state)
{
    char *buf = malloc(2 * (CSV_MAX_FIELDS + 1) + 8);
    struct csv c;
    size_t n = 0;

    assert_non_null(buf);
    for (int i = 0; i < CSV_MAX_FIELDS; i++) {
        buf[n++] = 'x';
        buf[n++] = i + 1 < CSV_MAX_FIELDS ? ',' : '\n';
    }
    csv_init(&c, buf, n);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(c.nfields, CSV_MAX_FIELDS);
    assert_string_equal(c.fields[CSV_MAX_FIELDS - 1], "x");
    csv_free(&c);

    buf[n - 1] = ',';
    buf[n++] = 'y';
    buf[n++] = '\n';
    csv_init(&c, buf, n);
    assert_int_equal(csv_next(&c), -1);
    assert_string_equal(c.error, "too many fields in one row");
    assert_int_equal(c.record_line, 1);
    csv_free(&c);
    free(buf);
}

static void test_field_size_bound(void **state)
{
    size_t len = CSV_MAX_FIELD + 16;
    char *buf = malloc(len);
    struct csv c;

    assert_non_null(buf);
    /* Exactly the bound: accepted, quoted or not. */
    memset(buf, 'f', CSV_MAX_FIELD);
    buf[CSV_MAX_FIELD] = '\n';
    csv_init(&c, buf, CSV_MAX_FIELD + 1);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(strlen(c.fields[0]), CSV_MAX_FIELD);
    csv_free(&c);

    buf[0] = '"';
    memset(buf + 1, 'q', CSV_MAX_FIELD);
    buf[CSV_MAX_FIELD + 1] = '"';
    csv_init(&c, buf, CSV_MAX_FIELD + 2);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(strlen(c.fields[0]), CSV_MAX_FIELD);
    csv_free(&c);

    /* One byte over: refused. */
    memset(buf, 'f', CSV_MAX_FIELD + 1);
    csv_init(&c, buf, CSV_MAX_FIELD + 1);
    assert_int_equal(csv_next(&c), -1);
    assert_string_equal(c.error, "field too large");
    csv_free(&c);

    buf[0] = '"';
    memset(buf + 1, 'q', CSV_MAX_FIELD + 1);
    buf[CSV_MAX_FIELD + 2] = '"';
    csv_init(&c, buf, CSV_MAX_FIELD + 3);
    assert_int_equal(csv_next(&c), -1);
    assert_string_equal(c.error, "field too large");
    csv_free(&c);
    free(buf);
}

static void test_record_size_bound(void **state)
{
    /* The widest record the bounds allow: every field at its maximum. */
    size_t len = (size_t)CSV_MAX_FIELDS * (CSV_MAX_FIELD + 1);
    char *buf = malloc(len);
    struct csv c;

    assert_non_null(buf);
    memset(buf, 'w', len);
    for (size_t i = 1; i <= CSV_MAX_FIELDS; i++)
        buf[i * (CSV_MAX_FIELD + 1) - 1] = i < CSV_MAX_FIELDS ? ',' : '\n';
    csv_init(&c, buf, len);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(c.nfields, CSV_MAX_FIELDS);
    for (size_t i = 0; i < CSV_MAX_FIELDS; i++)
        assert_int_equal(strlen(c.fields[i]), CSV_MAX_FIELD);
    assert_int_equal(csv_next(&c), 0);
    csv_free(&c);
    free(buf);
}

static void test_buffer_reuse(void **state)
{
    /* Fields of a record stay valid until the next call, which may grow
     * the buffer; a short record after a long one reads correctly. */
    size_t len = 5000;
    char *buf = malloc(len + 16);
    struct csv c;

    assert_non_null(buf);
    memset(buf, 'L', len);
    memcpy(buf + len, ",t\ns,u\n", 7);
    csv_init(&c, buf, len + 7);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(strlen(c.fields[0]), len);
    assert_string_equal(c.fields[1], "t");
    assert_int_equal(csv_next(&c), 1);
    assert_string_equal(c.fields[0], "s");
    assert_string_equal(c.fields[1], "u");
    assert_int_equal(c.nfields, 2);
    assert_int_equal(c.record_line, 2);
    csv_free(&c);
    csv_free(&c); /* twice is fine */
    free(buf);

    struct csv z;
    memset(&z, 0, sizeof z);
    csv_free(&z); /* a zeroed reader is fine */
}

static void test_nvidia_smi_sample(void **state)
{
    /* A real --query-gpu header and row (formats.md section 1). */
    static const char data[] =
        "uuid, name, pci.bus_id, serial, memory.used [MiB], index\n"
        "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa, NVIDIA GeForce RTX 2080 SUPER, "
        "00000000:01:00.0, [N/A], 575 MiB, 0\n";
    struct csv c;

    csv_init(&c, data, sizeof data - 1);
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(c.nfields, 6);
    assert_string_equal(c.fields[4], " memory.used [MiB]");
    assert_int_equal(csv_next(&c), 1);
    assert_int_equal(c.nfields, 6);
    assert_string_equal(c.fields[0], "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa");
    assert_string_equal(c.fields[3], " [N/A]");
    assert_string_equal(c.fields[5], " 0");
    assert_int_equal(csv_next(&c), 0);
    csv_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_line_ends),
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_empty_fields),
        cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_embedded_newlines),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_field_count_bound),
        cmocka_unit_test(test_field_size_bound),
        cmocka_unit_test(test_record_size_bound),
        cmocka_unit_test(test_buffer_reuse),
        cmocka_unit_test(test_nvidia_smi_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
