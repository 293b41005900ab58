/* Unit tests for src/core/kinds.c: resource validation for every kind (API
 * bodies and CSV text), the field each error names, and the kinds table
 * as the dashboard reads it. */
#include "unit.h"

#include "core/kinds.h"

#include <stdio.h>
#include <string.h>

/* Parses a JSON literal; the test fails on a typo in it. */
static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (v == NULL)
        fail_msg("bad JSON in test: %s (%s)", text, e.text);
    return v;
}

/* Checks text and expects success; returns attrs (caller decrefs). */
static json_t *check_ok(const char *text, bool from_text, struct gi_resource_in *out)
{
    json_t *in = J(text);
    struct gi_verr err = {{0}, {0}};
    int rc = gi_resource_check(in, from_text, out, &err);

    if (rc != GI_OK)
        fail_msg("refused %s: %s: %s", text, err.field, err.message);
    assert_non_null(out->attrs);
    json_t *attrs = out->attrs;
    /* Borrowed strings point into `in`; keep it alive through attrs' lifetime
     * by stashing it (the test compares before releasing). */
    json_object_set_new(attrs, "__in", in);
    return attrs;
}

/* Checks text, expects GI_INVALID naming field; returns nothing leaked. */
static void check_bad(const char *text, bool from_text, const char *field, const char *words)
{
    json_t *in = J(text);
    struct gi_verr err = {{0}, {0}};
    struct gi_resource_in out;
    int rc = gi_resource_check(in, from_text, &out, &err);

    if (rc != GI_INVALID) {
        json_decref(out.attrs);
        json_decref(in);
        fail_msg("accepted %s (rc %s)", text, gi_status_name(rc));
    }
    assert_null(out.attrs);
    if (strcmp(err.field, field) != 0)
        fail_msg("%s: error names field \"%s\" (%s), want \"%s\"", text, err.field, err.message,
                 field);
    if (words && strstr(err.message, words) == NULL)
        fail_msg("%s: message \"%s\" lacks \"%s\"", text, err.message, words);
    assert_true(err.message[0] != '\0');
    json_decref(in);
}

static void test_server_valid(void **state)
{
    struct gi_resource_in r;
    json_t *a = check_ok("{\"datacenter_id\": 3, \"kind\": \"server\", \"name\": \"gpu-node-01\","
                         " \"gpu_model\": \"H100\", \"gpu_count\": 8, \"hostname\": \"n1.dc\","
                         " \"position\": 42, \"cpu_cores\": 128, \"memory_gb\": 2048,"
                         " \"serial\": \"SN-1\", \"metadata\": {\"owner\": \"infra\", \"n\": 1}}",
                         false, &r);

    assert_int_equal(r.datacenter_id, 3);
    assert_string_equal(r.kind, "server");
    assert_string_equal(r.name, "gpu-node-01");
    assert_string_equal(r.state, "available"); /* the default */
    assert_null(r.tenant);
    assert_null(r.project);
    assert_string_equal(r.gpu_model, "H100");
    assert_int_equal(r.gpu_count, 8);
    assert_non_null(r.metadata);
    assert_string_equal(json_string_value(json_object_get(r.metadata, "owner")), "infra");
    assert_string_equal(json_string_value(json_object_get(a, "hostname")), "n1.dc");
    assert_int_equal(json_integer_value(json_object_get(a, "position")), 42);
    assert_int_equal(json_integer_value(json_object_get(a, "cpu_cores")), 128);
    assert_int_equal(json_integer_value(json_object_get(a, "memory_gb")), 2048);
    assert_string_equal(json_string_value(json_object_get(a, "serial")), "SN-1");
    /* Common fields do not leak into attrs. */
    assert_null(json_object_get(a, "name"));
    assert_null(json_object_get(a, "gpu_count"));
    assert_null(json_object_get(a, "metadata"));
    assert_int_equal(json_object_size(a), 6); /* five attributes and the stash */
    json_decref(a);
}

static void test_every_kind_valid(void **state)
{
    static const char *const bodies[] = {
        "{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"rack\": \"A1\"}",
        "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"host_id\": 7, \"vcpu\": 16,"
        " \"memory_gb\": 64, \"image\": \"ubuntu-24.04\"}",
        "{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\", \"storage_type\": "
        "\"object\", \"capacity_tb\": 1.5, \"protocol\": \"s3\"}",
        "{\"datacenter_id\": 1, \"kind\": \"switch\", \"name\": \"sw\", \"ports\": 64,"
        " \"speed_gbps\": 400, \"mgmt_address\": \"10.0.0.1\"}",
        "{\"datacenter_id\": 1, \"kind\": \"infiniband\", \"name\": \"ib\", \"fabric\": \"f1\","
        " \"device_type\": \"switch\", \"generation\": \"NDR\", \"ports\": 64}",
    };
    static const char *const kinds[] = {"server", "vm", "storage", "switch", "infiniband"};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        struct gi_resource_in r;
        json_t *a = check_ok(bodies[i], false, &r);
        assert_string_equal(r.kind, kinds[i]);
        json_decref(a);
    }
}

static void test_typed_attributes(void **state)
{
    struct gi_resource_in r;
    json_t *a = check_ok("{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\","
                         " \"capacity_tb\": 2, \"storage_type\": \"block\"}",
                         false, &r);
    assert_true(json_is_real(json_object_get(a, "capacity_tb")));
    assert_float_equal(json_real_value(json_object_get(a, "capacity_tb")), 2.0, 0);
    assert_string_equal(json_string_value(json_object_get(a, "storage_type")), "block");
    json_decref(a);

    /* null and empty-string attributes are simply absent. */
    a = check_ok("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\","
                 " \"hostname\": null, \"serial\": \"\", \"position\": null}",
                 false, &r);
    assert_null(json_object_get(a, "hostname"));
    assert_null(json_object_get(a, "serial"));
    assert_null(json_object_get(a, "position"));
    json_decref(a);
}

static void test_common_field_errors(void **state)
{
    check_bad("[1, 2]", false, "", "object");
    check_bad("{\"kind\": \"server\", \"name\": \"s\"}", false, "datacenter_id", "required");
    check_bad("{\"datacenter_id\": null, \"kind\": \"server\", \"name\": \"s\"}", false,
              "datacenter_id", "required");
    check_bad("{\"datacenter_id\": 0, \"kind\": \"server\", \"name\": \"s\"}", false,
              "datacenter_id", "between");
    check_bad("{\"datacenter_id\": -4, \"kind\": \"server\", \"name\": \"s\"}", false,
              "datacenter_id", "between");
    check_bad("{\"datacenter_id\": \"3\", \"kind\": \"server\", \"name\": \"s\"}", false,
              "datacenter_id", "whole number");
    check_bad("{\"datacenter_id\": 1.5, \"kind\": \"server\", \"name\": \"s\"}", false,
              "datacenter_id", "whole number");
    check_bad("{\"datacenter_id\": 1, \"name\": \"s\"}", false, "kind", "required");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"\", \"name\": \"s\"}", false, "kind", "empty");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"gpu\", \"name\": \"s\"}", false, "kind",
              "one of");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"Server\", \"name\": \"s\"}", false, "kind",
              "one of");
    check_bad("{\"datacenter_id\": 1, \"kind\": 5, \"name\": \"s\"}", false, "kind", "string");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\"}", false, "name", "required");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"\"}", false, "name",
              "empty");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": 12}", false, "name",
              "string");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"a\\u0001b\"}", false,
              "name", "control");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"gpu_count\": -1}",
              false, "gpu_count", "between");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"gpu_model\": \"H\","
              " \"gpu_count\": 1025}",
              false, "gpu_count", "between");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"gpu_count\": 4}",
              false, "gpu_model", "required");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"gpu_model\": 4}",
              false, "gpu_model", "string");
}

static void test_name_length(void **state)
{
    char body[512], name[200];
    struct gi_resource_in r;
    json_t *a;

    memset(name, 'n', 128);
    name[128] = '\0';
    snprintf(body, sizeof body, "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"%s\"}", name);
    a = check_ok(body, false, &r);
    assert_int_equal(strlen(r.name), 128);
    json_decref(a);

    name[128] = 'n';
    name[129] = '\0';
    snprintf(body, sizeof body, "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"%s\"}", name);
    check_bad(body, false, "name", "longer than 128");

    /* Attribute strings have their own bounds (rack: 32). */
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"rack\": "
              "\"123456789012345678901234567890123\"}",
              false, "rack", "longer than 32");
}

static void test_state_and_tenant_rules(void **state)
{
    struct gi_resource_in r;
    json_t *a;

    a = check_ok("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"in_use\", \"tenant\": \"acme\", \"project\": \"llm\"}",
                 false, &r);
    assert_string_equal(r.state, "in_use");
    assert_string_equal(r.tenant, "acme");
    assert_string_equal(r.project, "llm");
    json_decref(a);

    a = check_ok("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"reserved\", \"tenant\": \"acme\"}",
                 false, &r);
    assert_string_equal(r.state, "reserved");
    json_decref(a);

    /* Reserved may be held for no one yet. */
    a = check_ok("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"reserved\"}",
                 false, &r);
    assert_null(r.tenant);
    json_decref(a);

    static const char *const free_states[] = {"available", "maintenance", "retired"};
    for (size_t i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"%s\"}",
                 free_states[i]);
        a = check_ok(body, false, &r);
        assert_string_equal(r.state, free_states[i]);
        json_decref(a);
        snprintf(body, sizeof body,
                 "{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"%s\", \"tenant\": \"acme\"}",
                 free_states[i]);
        check_bad(body, false, "tenant", "in use or reserved");
        snprintf(body, sizeof body,
                 "{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"%s\", \"project\": \"p\"}",
                 free_states[i]);
        check_bad(body, false, "tenant", "in use or reserved");
    }

    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
              "\"in_use\"}",
              false, "tenant", "required");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
              "\"in_use\", \"tenant\": \"\"}",
              false, "tenant", "required");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": "
              "\"allocated\"}",
              false, "state", "one of");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"state\": 1}", false,
              "state", "string");
}

static void test_attribute_errors(void **state)
{
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"color\": \"red\"}",
              false, "color", "not an attribute of a server");
    /* An attribute of another kind is still unknown here. */
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"vcpu\": 4}", false,
              "vcpu", "not an attribute");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"position\": 101}",
              false, "position", "between 0 and 100");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"position\": -1}",
              false, "position", "between");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"position\": \"4\"}",
              false, "position", "whole number");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"position\": 4.5}",
              false, "position", "whole number");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"hostname\": 5}",
              false, "hostname", "string");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"server\", \"name\": \"s\", \"hostname\": []}",
              false, "hostname", "string");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"host_id\": 0}", false,
              "host_id", "between");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\", \"capacity_tb\": "
              "-0.5}",
              false, "capacity_tb", "between");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\", \"capacity_tb\": "
              "\"big\"}",
              false, "capacity_tb", "number");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\", \"storage_type\": "
              "\"tape\"}",
              false, "storage_type", "listed values");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"storage\", \"name\": \"st\", \"storage_type\": "
              "7}",
              false, "storage_type", "string");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"infiniband\", \"name\": \"ib\", \"generation\": "
              "\"ndr\"}",
              false, "generation", "listed values");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"switch\", \"name\": \"sw\", \"speed_gbps\": "
              "1601}",
              false, "speed_gbps", "between");
}

static void test_from_text(void **state)
{
    struct gi_resource_in r;
    json_t *a;

    /* A CSV row: every value arrives as text, empty cells mean absent. */
    a = check_ok("{\"datacenter_id\": \"2\", \"kind\": \"server\", \"name\": \"s\", \"state\": "
                 "\"in_use\", \"tenant\": \"acme\", \"project\": \"\", \"gpu_model\": \"A100\","
                 " \"gpu_count\": \"4\", \"position\": \"12\", \"cpu_cores\": \"\", \"rack\": "
                 "\"R7\"}",
                 true, &r);
    assert_int_equal(r.datacenter_id, 2);
    assert_int_equal(r.gpu_count, 4);
    assert_null(r.project);
    assert_int_equal(json_integer_value(json_object_get(a, "position")), 12);
    assert_true(json_is_integer(json_object_get(a, "position")));
    assert_null(json_object_get(a, "cpu_cores"));
    assert_string_equal(json_string_value(json_object_get(a, "rack")), "R7");
    json_decref(a);

    a = check_ok("{\"datacenter_id\": \"1\", \"kind\": \"storage\", \"name\": \"st\","
                 " \"capacity_tb\": \"2.5\", \"gpu_count\": \"\", \"storage_type\": \"\"}",
                 true, &r);
    assert_float_equal(json_real_value(json_object_get(a, "capacity_tb")), 2.5, 0);
    assert_int_equal(r.gpu_count, 0);
    assert_null(json_object_get(a, "storage_type"));
    json_decref(a);

    /* JSON numbers still count when reading text. */
    a = check_ok("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"vcpu\": 8}", true,
                 &r);
    json_decref(a);

    check_bad("{\"datacenter_id\": \"x\", \"kind\": \"server\", \"name\": \"s\"}", true,
              "datacenter_id", "whole number");
    check_bad("{\"datacenter_id\": \"\", \"kind\": \"server\", \"name\": \"s\"}", true,
              "datacenter_id", NULL);
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"server\", \"name\": \"s\", \"gpu_count\": "
              "\"8 GPUs\"}",
              true, "gpu_count", "whole number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"server\", \"name\": \"s\", \"gpu_count\": "
              "\" 8\"}",
              true, "gpu_count", "whole number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"server\", \"name\": \"s\", \"position\": "
              "\"1e2\"}",
              true, "position", "whole number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"server\", \"name\": \"s\", \"position\": "
              "\"99999999999999999999\"}",
              true, "position", "whole number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"storage\", \"name\": \"s\", "
              "\"capacity_tb\": \"1,5\"}",
              true, "capacity_tb", "number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"storage\", \"name\": \"s\", "
              "\"capacity_tb\": \"nan\"}",
              true, "capacity_tb", "number");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"storage\", \"name\": \"s\", "
              "\"capacity_tb\": \"2e6\"}",
              true, "capacity_tb", "between");
    check_bad("{\"datacenter_id\": \"1\", \"kind\": \"server\", \"name\": \"\"}", true, "name",
              "empty");
}

static void test_ignored_common_fields(void **state)
{
    struct gi_resource_in r;
    /* A record read back from the API can be sent again as a patch base. */
    json_t *a = check_ok("{\"id\": 9, \"version\": 3, \"datacenter\": \"dc1\", \"created_at\": "
                         "\"2026-01-01T00:00:00Z\", \"updated_at\": \"x\", \"datacenter_id\": 1,"
                         " \"kind\": \"vm\", \"name\": \"v\"}",
                         false, &r);
    assert_int_equal(json_object_size(a), 1); /* only the stash */
    json_decref(a);
}

static void test_metadata_bounds(void **state)
{
    struct gi_resource_in r;
    char key[80], body[8192];
    size_t n;
    json_t *a;

    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": [1]}", false,
              "metadata", "object");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": \"x\"}",
              false, "metadata", "object");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
              "{\"a\": {\"b\": 1}}}",
              false, "metadata", "metadata.a");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
              "{\"a\": [1]}}",
              false, "metadata", "metadata.a");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
              "{\"a\": \"\\u0007\"}}",
              false, "metadata", "not text");
    check_bad("{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
              "{\"\\u0007\": 1}}",
              false, "metadata", "key");

    /* Keys: 64 bytes fit, 65 do not. */
    memset(key, 'k', 65);
    key[64] = '\0';
    snprintf(body, sizeof body,
             "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
             "{\"%s\": true}}",
             key);
    a = check_ok(body, false, &r);
    json_decref(a);
    key[64] = 'k';
    key[65] = '\0';
    snprintf(body, sizeof body,
             "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
             "{\"%s\": true}}",
             key);
    check_bad(body, false, "metadata", "key");

    /* Values: 1024 bytes fit, 1025 do not. */
    char val[1100];
    memset(val, 'v', 1025);
    val[1024] = '\0';
    snprintf(body, sizeof body,
             "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
             "{\"k\": \"%s\", \"n\": null, \"f\": 1.5}}",
             val);
    a = check_ok(body, false, &r);
    json_decref(a);
    val[1024] = 'v';
    val[1025] = '\0';
    snprintf(body, sizeof body,
             "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", \"metadata\": "
             "{\"k\": \"%s\"}}",
             val);
    check_bad(body, false, "metadata", "too long");

    /* At most 64 keys. */
    for (int keys = 64; keys <= 65; keys++) {
        n = (size_t)snprintf(body, sizeof body,
                             "{\"datacenter_id\": 1, \"kind\": \"vm\", \"name\": \"v\", "
                             "\"metadata\": {");
        for (int i = 0; i < keys; i++)
            n += (size_t)snprintf(body + n, sizeof body - n, "%s\"k%d\": %d", i ? ", " : "", i, i);
        snprintf(body + n, sizeof body - n, "}}");
        if (keys == 64) {
            a = check_ok(body, false, &r);
            assert_int_equal(json_object_size(r.metadata), 64);
            json_decref(a);
        } else {
            check_bad(body, false, "metadata", "more than 64");
        }
    }
}

static void test_kind_find(void **state)
{
    assert_non_null(gi_kind_find("server"));
    assert_string_equal(gi_kind_find("vm")->counts, "vms");
    assert_string_equal(gi_kind_find("infiniband")->label, "InfiniBand");
    assert_null(gi_kind_find("gpu"));
    assert_null(gi_kind_find(""));
    assert_null(gi_kind_find(NULL));
}

static void test_kinds_json(void **state)
{
    static const char *const kinds[] = {"server", "vm", "storage", "switch", "infiniband"};
    static const char *const counts[] = {"servers", "vms", "storages", "switches", "infiniband"};
    json_t *arr = gi_kinds_json();
    size_t i;
    json_t *k;

    assert_true(json_is_array(arr));
    assert_int_equal(json_array_size(arr), 5);
    json_array_foreach(arr, i, k) {
        json_t *fields = json_object_get(k, "fields"), *f;
        size_t j;
        assert_string_equal(json_string_value(json_object_get(k, "kind")), kinds[i]);
        assert_string_equal(json_string_value(json_object_get(k, "counts")), counts[i]);
        assert_non_null(json_string_value(json_object_get(k, "label")));
        assert_true(json_is_array(fields));
        assert_true(json_array_size(fields) > 0);
        json_array_foreach(fields, j, f) {
            const char *type = json_string_value(json_object_get(f, "type"));
            assert_non_null(json_string_value(json_object_get(f, "name")));
            assert_non_null(json_string_value(json_object_get(f, "label")));
            assert_non_null(type);
            if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
                assert_true(json_is_number(json_object_get(f, "min")));
                assert_true(json_is_number(json_object_get(f, "max")));
            } else if (strcmp(type, "string") == 0) {
                assert_true(json_integer_value(json_object_get(f, "maxlen")) > 0);
            } else if (strcmp(type, "enum") == 0) {
                assert_true(json_array_size(json_object_get(f, "choices")) > 0);
            } else {
                assert_string_equal(type, "boolean");
            }
        }
    }
    /* Spot-check one field of each shape. */
    json_t *server = json_object_get(json_array_get(arr, 0), "fields");
    json_t *pos = NULL, *host = NULL;
    json_array_foreach(server, i, k) {
        const char *name = json_string_value(json_object_get(k, "name"));
        if (strcmp(name, "position") == 0)
            pos = k;
        if (strcmp(name, "hostname") == 0)
            host = k;
    }
    assert_non_null(pos);
    assert_non_null(host);
    assert_string_equal(json_string_value(json_object_get(pos, "type")), "integer");
    assert_float_equal(json_number_value(json_object_get(pos, "max")), 100, 0);
    assert_int_equal(json_integer_value(json_object_get(host, "maxlen")), 253);
    json_t *st = json_array_get(json_object_get(json_array_get(arr, 2), "fields"), 0);
    assert_string_equal(json_string_value(json_object_get(st, "name")), "storage_type");
    assert_string_equal(json_string_value(json_object_get(st, "type")), "enum");
    assert_string_equal(json_string_value(json_array_get(json_object_get(st, "choices"), 0)),
                        "block");
    json_decref(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_valid),
        cmocka_unit_test(test_every_kind_valid),
        cmocka_unit_test(test_typed_attributes),
        cmocka_unit_test(test_common_field_errors),
        cmocka_unit_test(test_name_length),
        cmocka_unit_test(test_state_and_tenant_rules),
        cmocka_unit_test(test_attribute_errors),
        cmocka_unit_test(test_from_text),
        cmocka_unit_test(test_ignored_common_fields),
        cmocka_unit_test(test_metadata_bounds),
        cmocka_unit_test(test_kind_find),
        cmocka_unit_test(test_kinds_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
