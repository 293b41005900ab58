/* NetBox list pages (tests/fixtures/netbox) into asset records: v4 and v2
 * devices, modules, inventory items, paging fields, per-field degrading;
 * the answer of a device lookup by serial. */
#include "unit.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "parse/netbox.h"

#define STR(o, k, want) assert_string_equal(json_string_value(json_object_get((o), (k))), (want))
#define INT(o, k, want) assert_int_equal(json_integer_value(json_object_get((o), (k))), (want))
#define ABSENT(o, k) assert_null(json_object_get((o), (k)))
#define CUSTOM(r) json_object_get((r), "custom")
#define LOC(r) json_object_get((r), "location")

struct page {
    json_t *records, *warnings;
    char next[NETBOX_URL_MAX];
    int64_t count;
};

static void load(const char *name, enum netbox_list list, struct page *p)
{
    char err[NETBOX_ERR_LEN];
    size_t len;
    char *d = unit_fixture("netbox", name, &len);

    p->records = json_array();
    p->warnings = json_array();
    if (netbox_parse_page(d, len, list, p->records, p->warnings, p->next, sizeof p->next, &p->count,
                          err, sizeof err) != GI_OK)
        fail_msg("%s: %s", name, err);
    free(d);
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

static void devices_v4(void **state)
{
    struct page p;
    json_t *r;

    (void)state;
    load("devices-page1.json", NETBOX_DEVICES, &p);
    assert_int_equal(json_array_size(p.records), 2);
    assert_string_equal(p.next, "NEXT_URL");
    assert_int_equal(p.count, 3);
    r = json_array_get(p.records, 0);
    STR(r, "kind", "server");
    STR(r, "serial", "1560323000123");
    STR(r, "tag", "NB-0101");
    STR(r, "model", "DGX H100");
    STR(r, "vendor", "NVIDIA");
    STR(r, "source_key", "netbox:device:101");
    STR(r, "site_slug", "fra1");
    STR(LOC(r), "datacenter", "Frankfurt 1");
    STR(LOC(r), "room", "Hall B");
    STR(LOC(r), "rack", "B07");
    INT(LOC(r), "u", 22);
    STR(CUSTOM(r), "external_status", "active");
    STR(CUSTOM(r), "external_stage", "active");
    STR(CUSTOM(r), "role", "GPU Server");
    STR(CUSTOM(r), "name", "dgx-h100-01");
    ABSENT(r, "stage");
    /* An empty serial and a null tag are absent; half units are warned. */
    r = json_array_get(p.records, 1);
    ABSENT(r, "serial");
    ABSENT(r, "tag");
    ABSENT(LOC(r), "u");
    STR(LOC(r), "rack", "A01");
    assert_true(warned(&p, 1, "position"));
    STR(CUSTOM(r), "external_stage", "diagnostic_repair");
    done(&p);

    load("devices-page2.json", NETBOX_DEVICES, &p);
    assert_string_equal(p.next, "");
    r = json_array_get(p.records, 0);
    STR(r, "kind", "switch");
    STR(CUSTOM(r), "external_stage", "ordered");
    done(&p);
}

static void devices_v2(void **state)
{
    struct page p;
    json_t *r;

    (void)state;
    load("devices-v2.json", NETBOX_DEVICES, &p);
    /* The result that is not an object is warned, not a record. */
    assert_int_equal(json_array_size(p.records), 2);
    assert_true(warned(&p, 2, ""));
    r = json_array_get(p.records, 0);
    STR(CUSTOM(r), "role", "Compute");
    STR(CUSTOM(r), "external_status", "inventory");
    STR(CUSTOM(r), "external_stage", "spare");
    /* The parser keeps the text; the store refuses a tag it cannot hold. */
    STR(r, "tag", "has spaces is not a tag");
    STR(LOC(r), "datacenter", "Old DC");
    ABSENT(LOC(r), "rack");
    ABSENT(LOC(r), "u");
    r = json_array_get(p.records, 1);
    STR(r, "kind", "other");
    STR(r, "source_key", "netbox:device:8");
    ABSENT(r, "serial");
    ABSENT(r, "model");
    ABSENT(r, "location");
    ABSENT(CUSTOM(r), "external_status");
    assert_true(warned(&p, 1, "serial"));
    assert_true(warned(&p, 1, "name"));
    assert_true(warned(&p, 1, "device_type"));
    assert_true(warned(&p, 1, "position"));
    assert_true(warned(&p, 1, "status"));
    done(&p);
}

static void modules_and_items(void **state)
{
    struct page p;
    json_t *r;

    (void)state;
    load("modules.json", NETBOX_MODULES, &p);
    r = json_array_get(p.records, 0);
    STR(r, "kind", "gpu");
    STR(r, "model", "H100 SXM5 80GB");
    STR(r, "serial", "1654922001234");
    STR(r, "parent_source_key", "netbox:device:101");
    STR(r, "source_key", "netbox:module:501");
    STR(CUSTOM(r), "bay", "GPU0");
    STR(CUSTOM(r), "external_status", "active");
    r = json_array_get(p.records, 1);
    STR(r, "kind", "other");
    STR(CUSTOM(r), "external_stage", "spare");
    done(&p);

    load("inventory-items.json", NETBOX_ITEMS, &p);
    r = json_array_get(p.records, 0);
    STR(r, "kind", "psu");
    STR(r, "model", "DPS-3000AB");
    STR(r, "vendor", "Delta");
    STR(r, "source_key", "netbox:item:901");
    STR(r, "parent_source_key", "netbox:device:101");
    r = json_array_get(p.records, 1);
    STR(r, "kind", "ssd");
    r = json_array_get(p.records, 2);
    STR(r, "kind", "nic");
    STR(r, "model", "ConnectX-7");
    ABSENT(r, "parent_source_key");
    assert_true(warned(&p, 2, "device"));
    done(&p);
}

static void broken_pages(void **state)
{
    static const char *const bad[] = {"",    "{", "[]", "{\"results\": {}}", "{\"detail\": \"x\"}",
                                      "null"};
    json_t *recs = json_array(), *warns = json_array();
    char next[64], err[NETBOX_ERR_LEN];
    int64_t count;
    char longnext[200];

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_status(netbox_parse_page(bad[i], strlen(bad[i]), NETBOX_DEVICES, recs, warns, next,
                                        sizeof next, &count, err, sizeof err),
                      GI_INVALID);
        assert_true(err[0] != '\0');
    }
    /* A next URL longer than the caller's buffer fails the page rather
     * than being followed cut short. */
    snprintf(longnext, sizeof longnext, "{\"next\": \"http://h/%0150d\", \"results\": []}", 0);
    assert_status(netbox_parse_page(longnext, strlen(longnext), NETBOX_DEVICES, recs, warns, next,
                                    sizeof next, &count, err, sizeof err),
                  GI_INVALID);
    assert_int_equal(json_array_size(recs), 0);
    json_decref(recs);
    json_decref(warns);
}

static void detail_and_stages(void **state)
{
    char d[64];
    size_t len;
    char *body = unit_fixture("netbox", "error-403.json", &len);

    (void)state;
    netbox_error_detail(body, len, d, sizeof d);
    assert_string_equal(d, "Invalid token");
    netbox_error_detail("<html>", 6, d, sizeof d);
    assert_string_equal(d, "");
    free(body);
    assert_string_equal(netbox_stage_for("decommissioning"), "decommissioned");
    assert_null(netbox_stage_for("custom-status"));
}

/* One lookup answer: its status, and on GI_OK the matches and total. */
static int lookup(const char *body, json_t **m, int64_t *total)
{
    char err[NETBOX_ERR_LEN];
    int rc = netbox_lookup_parse(body, strlen(body), "SER-1", m, total, err, sizeof err);

    if (rc == GI_INVALID)
        assert_true(err[0] != '\0');
    return rc;
}

static void lookup_by_serial(void **state)
{
    json_t *m = NULL;
    int64_t total = -1;

    (void)state;
    /* one device, its serial in another case: NetBox's filter ignores case */
    assert_int_equal(lookup("{\"count\":1,\"next\":null,\"results\":[{\"id\":7,\"serial\":"
                            "\"ser-1\",\"name\":\"n7\"}]}",
                            &m, &total),
                     GI_OK);
    assert_int_equal(total, 1);
    assert_int_equal(json_array_size(m), 1);
    INT(json_array_get(m, 0), "id", 7);
    STR(json_array_get(m, 0), "name", "n7");
    json_decref(m);
    /* none, and several (count beyond the page) */
    assert_int_equal(lookup("{\"count\":0,\"results\":[]}", &m, &total), GI_OK);
    assert_int_equal(total, 0);
    assert_int_equal(json_array_size(m), 0);
    json_decref(m);
    assert_int_equal(lookup("{\"count\":3,\"results\":[{\"id\":1,\"serial\":\"SER-1\"},"
                            "{\"id\":2,\"serial\":\"SER-1\"}]}",
                            &m, &total),
                     GI_OK);
    assert_int_equal(total, 3);
    assert_int_equal(json_array_size(m), 2);
    json_decref(m);
    /* a NetBox that ignored the filter, a device without id, no list */
    m = NULL;
    assert_int_equal(lookup("{\"count\":2,\"results\":[{\"id\":1,\"serial\":\"SER-1\"},"
                            "{\"id\":2,\"serial\":\"OTHER\"}]}",
                            &m, &total),
                     GI_INVALID);
    assert_null(m);
    assert_int_equal(lookup("{\"results\":[{\"serial\":\"SER-1\"}]}", &m, &total), GI_INVALID);
    assert_int_equal(lookup("{\"detail\":\"Invalid token\"}", &m, &total), GI_INVALID);
    assert_int_equal(lookup("not json", &m, &total), GI_INVALID);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices_v4),        cmocka_unit_test(devices_v2),
        cmocka_unit_test(modules_and_items), cmocka_unit_test(broken_pages),
        cmocka_unit_test(detail_and_stages), cmocka_unit_test(lookup_by_serial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
