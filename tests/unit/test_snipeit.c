/* Snipe-IT hardware pages (tests/fixtures/snipeit) into asset records:
 * HTML-escaped strings, "36 months", locale money, date objects, custom
 * fields by label, status_label / status, error answers with HTTP 200;
 * the answer of a lookup by serial. */
#include "unit.h"

#include <string.h>

#include "parse/snipeit.h"

#define STR(o, k, want) assert_string_equal(json_string_value(json_object_get((o), (k))), (want))
#define INT(o, k, want) assert_int_equal(json_integer_value(json_object_get((o), (k))), (want))
#define ABSENT(o, k) assert_null(json_object_get((o), (k)))
#define CUSTOM(r) json_object_get((r), "custom")

struct page {
    json_t *records, *warnings;
    int64_t total;
    size_t rows;
};

static int parse(const char *name, struct page *p, char *err, size_t errlen)
{
    size_t len;
    char *d = unit_fixture("snipeit", name, &len);
    int rc;

    p->records = json_array();
    p->warnings = json_array();
    rc = snipeit_parse_page(d, len, p->records, p->warnings, &p->total, &p->rows, err, errlen);
    free(d);
    return rc;
}

static void done(struct page *p)
{
    json_decref(p->records);
    json_decref(p->warnings);
}

static bool warned(const struct page *p, size_t index, const char *field)
{
    size_t i;
    json_t *w;

    json_array_foreach(p->warnings, i, w)
        if (json_integer_value(json_object_get(w, "index")) == (json_int_t)index &&
            strcmp(json_string_value(json_object_get(w, "field")), field) == 0)
            return true;
    return false;
}

static void page1(void **state)
{
    struct page p;
    char err[SNIPEIT_ERR_LEN];
    json_t *r;

    (void)state;
    assert_status(parse("hardware-page1.json", &p, err, sizeof err), GI_OK);
    assert_int_equal(p.total, 3);
    assert_int_equal(p.rows, 2);
    r = json_array_get(p.records, 0);
    STR(r, "tag", "SNIPE-0017");
    STR(r, "serial", "SRV-9911");
    STR(r, "kind", "server");
    STR(r, "model", "PowerEdge XE9680");
    STR(r, "vendor", "Dell");
    STR(r, "supplier", "B&H Systems");
    STR(r, "order_number", "PO-2024-118");
    STR(r, "purchase_date", "2024-01-31");
    STR(json_object_get(r, "purchase_cost"), "amount", "312450.00");
    INT(r, "warranty_months", 36);
    STR(json_object_get(r, "location"), "datacenter", "Frankfurt 1");
    STR(r, "source_key", "snipeit:hardware:17");
    STR(CUSTOM(r), "name", "Render node \"A\" & spare");
    STR(CUSTOM(r), "Rack & U", "B07 / 12");
    STR(CUSTOM(r), "external_status", "Ready to Deploy");
    STR(CUSTOM(r), "external_stage", "spare");
    ABSENT(r, "stage");
    r = json_array_get(p.records, 1);
    STR(r, "kind", "gpu");
    STR(r, "gpu_uuid", "GPU-5c2b3a94-1f2e-4d7a-9a47-0e5f6c7d8e9f");
    STR(r, "purchase_date", "2024-02-15");
    STR(json_object_get(r, "purchase_cost"), "amount", "1234.56");
    /* No current location: the default one. */
    STR(json_object_get(r, "location"), "datacenter", "Amsterdam");
    STR(CUSTOM(r), "external_status", "Deployed");
    STR(CUSTOM(r), "external_stage", "active");
    ABSENT(CUSTOM(r), "Firmware");
    ABSENT(r, "warranty_months");
    assert_int_equal(json_array_size(p.warnings), 0);
    done(&p);
}

static void page2_degrades(void **state)
{
    struct page p;
    char err[SNIPEIT_ERR_LEN];
    json_t *r;

    (void)state;
    assert_status(parse("hardware-page2.json", &p, err, sizeof err), GI_OK);
    r = json_array_get(p.records, 0);
    STR(r, "serial", "PSU<7>");
    STR(r, "kind", "psu");
    STR(CUSTOM(r), "external_stage", "decommissioned");
    ABSENT(r, "warranty_months");
    ABSENT(r, "purchase_date");
    ABSENT(r, "purchase_cost");
    assert_true(warned(&p, 0, "warranty_months"));
    assert_true(warned(&p, 0, "purchase_date"));
    assert_true(warned(&p, 0, "purchase_cost"));
    STR(r, "tag", "SNIPE-0019");
    done(&p);
}

static void errors(void **state)
{
    struct page p;
    char err[SNIPEIT_ERR_LEN];
    json_t *recs = json_array(), *warns = json_array();
    int64_t total;
    size_t rows;

    (void)state;
    assert_status(parse("error-200.json", &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "The limit must be an integer."));
    assert_int_equal(json_array_size(p.records), 0);
    done(&p);
    assert_status(parse("laravel-error.json", &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "offset"));
    done(&p);
    assert_status(parse("unauthenticated.json", &p, err, sizeof err), GI_INVALID);
    assert_string_equal(err, "Unauthenticated.");
    done(&p);
    assert_status(snipeit_parse_page("{", 1, recs, warns, &total, &rows, err, sizeof err),
                  GI_INVALID);
    assert_status(
        snipeit_parse_page("{\"total\":1}", 11, recs, warns, &total, &rows, err, sizeof err),
        GI_INVALID);
    json_decref(recs);
    json_decref(warns);
}

static void html(void **state)
{
    char out[64];

    (void)state;
    assert_true(snipeit_html_decode("a &amp; b &lt;c&gt; &quot;d&quot; &#039;e&#39; &#x41;", out,
                                    sizeof out));
    assert_string_equal(out, "a & b <c> \"d\" 'e' A");
    assert_true(snipeit_html_decode("caf&#233; &#x20AC;", out, sizeof out));
    assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac");
    /* Unknown and malformed references stay as written. */
    assert_true(snipeit_html_decode("&copy; &#; &#xZZ; & &amp", out, sizeof out));
    assert_string_equal(out, "&copy; &#; &#xZZ; & &amp");
    assert_false(snipeit_html_decode("&#0;", out, sizeof out));
    assert_false(snipeit_html_decode("&#xD800;", out, sizeof out));
    assert_false(snipeit_html_decode("0123456789", out, 5));
}

static void money(void **state)
{
    static const struct {
        const char *in, *want;
    } ok[] = {{"1,234.56", "1234.56"},     {"1.234,56", "1234.56"},  {"1234", "1234"},
              {"1,234", "1234"},           {"12,5", "12.5"},         {"1 234,50", "1234.50"},
              {"1'234.50", "1234.50"},     {"1.234.567", "1234567"}, {"0.99", "0.99"},
              {"1,234,567.8", "1234567.8"}};
    static const char *const bad[] = {"", "cheap", "-5", "1.2.3,4,5", "$10", "12.", "1,2,3.4.5"};
    char out[32];

    (void)state;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        if (!snipeit_money(ok[i].in, out, sizeof out))
            fail_msg("%s not read", ok[i].in);
        assert_string_equal(out, ok[i].want);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (snipeit_money(bad[i], out, sizeof out))
            fail_msg("%s read as %s", bad[i], out);
}

static void months(void **state)
{
    int64_t m;
    json_t *v;

    (void)state;
    assert_true(snipeit_months(v = json_string("36 months"), &m));
    assert_int_equal(m, 36);
    json_decref(v);
    assert_true(snipeit_months(v = json_integer(12), &m));
    assert_int_equal(m, 12);
    json_decref(v);
    assert_false(snipeit_months(v = json_string("months"), &m));
    json_decref(v);
    assert_false(snipeit_months(v = json_string("99999 months"), &m));
    json_decref(v);
    assert_false(snipeit_months(json_null(), &m));
    assert_string_equal(snipeit_stage_for("pending"), "received");
    assert_null(snipeit_stage_for("other"));
}

/* One byserial answer: its status, and on GI_OK the matches and total. */
static int lookup(const char *body, json_t **m, int64_t *total)
{
    char err[SNIPEIT_ERR_LEN];
    int rc = snipeit_lookup_parse(body, strlen(body), "A&B-1", m, total, err, sizeof err);

    if (rc == GI_INVALID)
        assert_true(err[0] != '\0');
    return rc;
}

static void lookup_by_serial(void **state)
{
    json_t *m = NULL;
    int64_t total = -1;

    (void)state;
    /* the serial as Snipe-IT sends it: HTML-escaped, another case */
    assert_int_equal(
        lookup("{\"total\":1,\"rows\":[{\"id\":12,\"serial\":\"a&amp;b-1\"}]}", &m, &total), GI_OK);
    assert_int_equal(total, 1);
    INT(json_array_get(m, 0), "id", 12);
    json_decref(m);
    /* "none" is Snipe-IT's error answer with HTTP 200 */
    assert_int_equal(lookup("{\"status\":\"error\",\"messages\":\"Asset does not exist.\","
                            "\"payload\":null}",
                            &m, &total),
                     GI_OK);
    assert_int_equal(total, 0);
    assert_int_equal(json_array_size(m), 0);
    json_decref(m);
    assert_int_equal(lookup("{\"total\":2,\"rows\":[{\"id\":1,\"serial\":\"A&amp;B-1\"},"
                            "{\"id\":2,\"serial\":\"A&amp;B-1\"}]}",
                            &m, &total),
                     GI_OK);
    assert_int_equal(total, 2);
    json_decref(m);
    m = NULL;
    /* another serial, no id, a Laravel error, not JSON */
    assert_int_equal(lookup("{\"total\":1,\"rows\":[{\"id\":1,\"serial\":\"OTHER\"}]}", &m, &total),
                     GI_INVALID);
    assert_null(m);
    assert_int_equal(lookup("{\"total\":1,\"rows\":[{\"serial\":\"A&amp;B-1\"}]}", &m, &total),
                     GI_INVALID);
    assert_int_equal(lookup("{\"message\":\"Unauthenticated.\"}", &m, &total), GI_INVALID);
    assert_int_equal(lookup("<html>", &m, &total), GI_INVALID);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(page1),
        cmocka_unit_test(page2_degrades),
        cmocka_unit_test(errors),
        cmocka_unit_test(html),
        cmocka_unit_test(money),
        cmocka_unit_test(months),
        cmocka_unit_test(lookup_by_serial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
