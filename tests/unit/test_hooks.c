/* Unit tests for src/core/hooksig.c (every signature vector of the
 * formats reference, section 13) and src/core/hookbody.c (each format's
 * body and the reading of ticket replies). */
#include "unit.h"

#include "core/hookbody.h"
#include "core/hooksig.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static const char vec_secret[] = "gpuinv-test-secret";
static const char vec_body[] = "{\"event\":\"gpu.idle\",\"asset_tag\":\"GPU-000123\"}";

static void test_github_doc_vector(void **state)
{
    char out[HOOKSIG_GITHUB_LEN];
    (void)state;
    hooksig_github("It's a Secret to Everybody", "Hello, World!", 13, out);
    assert_string_equal(out,
                        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
}

static void test_github_our_vector(void **state)
{
    char out[HOOKSIG_GITHUB_LEN];
    (void)state;
    assert_int_equal(strlen(vec_body), 45);
    hooksig_github(vec_secret, vec_body, strlen(vec_body), out);
    assert_string_equal(out,
                        "sha256=bba92d662a113ab9816c37a81c0c0c4b11853f5de8bd57bcb6eeb04bf0bee998");
}

/* Stripe and Slack sign "<ts>.<body>" and "v0:<ts>:<body>": the same MAC
 * over a different signed content. */
static void test_stripe_slack_vectors(void **state)
{
    char content[128], hex[65];
    (void)state;
    snprintf(content, sizeof content, "1767225600.%s", vec_body);
    hooksig_hmac_hex((const unsigned char *)vec_secret, strlen(vec_secret), content,
                     strlen(content), hex);
    assert_string_equal(hex, "deb970d3309585268018d6b75f03281fa1abcbeeba0182498726e25bac588337");
    snprintf(content, sizeof content, "v0:1767225600:%s", vec_body);
    hooksig_hmac_hex((const unsigned char *)vec_secret, strlen(vec_secret), content,
                     strlen(content), hex);
    assert_string_equal(hex, "ab12e75c120a92795f272299af3c3d44adadb6112eec0cafa1b6d454eb4eb88f");
}

static void test_standard_vector(void **state)
{
    static const char secret[] = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3";
    unsigned char key[HOOKSIG_KEY_MAX];
    char out[HOOKSIG_STANDARD_LEN];
    size_t n;
    (void)state;
    assert_int_equal(hooksig_key(secret, key, &n), 0);
    assert_int_equal(n, 24);
    assert_memory_equal(key, "0123456789abcdef01234567", 24);
    assert_int_equal(
        hooksig_standard(secret, "msg_0001", 1767225600, vec_body, strlen(vec_body), out), 0);
    assert_string_equal(out, "v1,ncAJSrvsehtXH0/p2p92dWOfD1sueWbCf3+rND6LUoQ=");
    /* Verification accepts it among other signatures and schemes. */
    assert_true(hooksig_standard_verify(
        secret, "msg_0001", 1767225600, vec_body, strlen(vec_body),
        "v1a,AAAA v1,bm90IGl0 v1,ncAJSrvsehtXH0/p2p92dWOfD1sueWbCf3+rND6LUoQ="));
    assert_false(
        hooksig_standard_verify(secret, "msg_0002", 1767225600, vec_body, strlen(vec_body), out));
    assert_false(
        hooksig_standard_verify(secret, "msg_0001", 1767225601, vec_body, strlen(vec_body), out));
}

static void test_key_forms(void **state)
{
    unsigned char key[HOOKSIG_KEY_MAX];
    char out[HOOKSIG_STANDARD_LEN];
    size_t n;
    (void)state;
    /* A secret without the prefix is its own bytes. */
    assert_int_equal(hooksig_key("plain secret", key, &n), 0);
    assert_int_equal(n, 12);
    assert_memory_equal(key, "plain secret", 12);
    assert_int_equal(hooksig_key("whsec_not base64!", key, &n), -1);
    assert_int_equal(hooksig_key("whsec_", key, &n), -1);
    assert_int_equal(hooksig_standard("whsec_***", "m", 1, "x", 1, out), -1);
}

static json_t *context(void)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:i}, s:s, s:{s:s, "
                     "s:i, s:s}}, s:{s:i, s:s}, s:{s:s, s:s}}",
                     "body", "XID 79 on three days this month.\n\nMoved to repair.", "reason",
                     "xid errors", "asset", "tag", "GI-000123", "kind", "gpu", "serial",
                     "1320321012345", "model", "H100 SXM", "location", "datacenter", "fra1", "room",
                     "R2", "rack", "A07", "u", 12, "owner_team", "ml-infra", "warranty", "end",
                     "2026-12-31", "days_left", 30, "status", "expiring", "rule", "id", 7, "name",
                     "XID on 3 days", "gpu", "uuid", "GPU-6f1", "host", "node-1");
}

static void test_generic_body(void **state)
{
    json_t *ctx = context(), *b;
    (void)state;
    b = hookbody_build("generic", "ticket.opened", ctx, NULL, "msg_1", 1767225600);
    assert_non_null(b);
    assert_string_equal(json_string_value(json_object_get(b, "event")), "ticket.opened");
    assert_string_equal(json_string_value(json_object_get(b, "id")), "msg_1");
    assert_string_equal(json_string_value(json_object_get(b, "at")), "2026-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "asset"), "serial")),
                        "1320321012345");
    assert_null(hookbody_build("teams", "x", ctx, NULL, "m", 0));
    json_decref(b);
    json_decref(ctx);
}

/* The text of every node of an ADF tree, concatenated, into buf. */
static void adf_text(const json_t *node, char *buf, size_t len)
{
    const json_t *kid;
    size_t i;
    if (json_is_string(json_object_get(node, "text"))) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s", json_string_value(json_object_get(node, "text")));
    }
    json_array_foreach(json_object_get(node, "content"), i, kid)
        adf_text(kid, buf, len);
}

static void test_jira_body(void **state)
{
    json_t *ctx = context(), *cfg, *b, *f, *desc, *list;
    char text[2048] = "";
    (void)state;
    cfg = json_pack("{s:s, s:s, s:[s,s], s:s}", "project", "OPS", "issuetype", "Bug", "labels",
                    "gpu fault", " needs  triage ", "priority", "High");
    json_object_set_new(ctx, "title", json_string("GI-000123: XID errors on 3 days"));
    b = hookbody_build("jira", "ticket.opened", ctx, cfg, "msg_1", 0);
    f = json_object_get(b, "fields");
    assert_string_equal(json_string_value(json_object_get(json_object_get(f, "project"), "key")),
                        "OPS");
    assert_string_equal(json_string_value(json_object_get(json_object_get(f, "issuetype"), "name")),
                        "Bug");
    assert_string_equal(json_string_value(json_object_get(json_object_get(f, "priority"), "name")),
                        "High");
    assert_string_equal(json_string_value(json_object_get(f, "summary")),
                        "GI-000123: XID errors on 3 days");
    assert_string_equal(json_string_value(json_array_get(json_object_get(f, "labels"), 0)),
                        "gpu-fault");
    assert_string_equal(json_string_value(json_array_get(json_object_get(f, "labels"), 1)),
                        "needs-triage");
    desc = json_object_get(f, "description");
    assert_string_equal(json_string_value(json_object_get(desc, "type")), "doc");
    assert_int_equal(json_integer_value(json_object_get(desc, "version")), 1);
    /* Two body paragraphs, the reason, then the bullet list of facts. */
    assert_int_equal(json_array_size(json_object_get(desc, "content")), 4);
    list = json_array_get(json_object_get(desc, "content"), 3);
    assert_string_equal(json_string_value(json_object_get(list, "type")), "bulletList");
    assert_int_equal(json_array_size(json_object_get(list, "content")), 7);
    adf_text(desc, text, sizeof text);
    assert_non_null(strstr(text, "Asset: GI-000123 (gpu H100 SXM)"));
    assert_non_null(strstr(text, "Serial: 1320321012345"));
    assert_non_null(strstr(text, "Location: fra1 / room R2 / rack A07 / U12"));
    assert_non_null(strstr(text, "Owner team: ml-infra"));
    assert_non_null(strstr(text, "Warranty: expiring, ends 2026-12-31, 30 days left"));
    assert_non_null(strstr(text, "Rule: XID on 3 days (rule 7)"));
    assert_non_null(strstr(text, "Reason: xid errors"));
    json_decref(b);

    b = hookbody_build("jira_v2", "ticket.opened", ctx, cfg, "msg_1", 0);
    desc = json_object_get(json_object_get(b, "fields"), "description");
    assert_true(json_is_string(desc));
    assert_non_null(strstr(json_string_value(desc), "XID 79 on three days this month.\n\nMoved"));
    assert_non_null(strstr(json_string_value(desc), "\n* *Serial:* 1320321012345"));
    json_decref(b);
    json_decref(cfg);
    json_decref(ctx);
}

static void test_summary_utf8_cut(void **state)
{
    char title[400], out[HOOKBODY_SUMMARY_MAX + 1];
    json_t *ctx;
    size_t i;
    (void)state;
    /* 254 ASCII bytes then "é" (2 bytes): 256 bytes, the last character
     * would be split at 255. */
    for (i = 0; i < 254; i++)
        title[i] = 'a';
    memcpy(title + 254, "\xc3\xa9", 3);
    ctx = json_pack("{s:s}", "title", title);
    hookbody_title(ctx, "x", out, HOOKBODY_SUMMARY_MAX);
    assert_int_equal(strlen(out), 254);
    json_decref(ctx);
    /* Without a title: "<reason>: <asset tag>". */
    ctx = json_pack("{s:s, s:{s:s}}", "reason", "warranty ends", "asset", "tag", "GI-9");
    hookbody_title(ctx, "x", out, HOOKBODY_SUMMARY_MAX);
    assert_string_equal(out, "warranty ends: GI-9");
    json_decref(ctx);
}

static void test_servicenow_body(void **state)
{
    json_t *ctx = context(), *cfg, *b;
    char err[200];
    (void)state;
    cfg = json_pack("{s:s, s:s, s:s, s:i, s:s}", "assignment_group", "GPU Ops", "category",
                    "hardware", "caller_id", "gpuinv", "urgency", 1, "impact", "2");
    json_object_set_new(ctx, "ticket", json_pack("{s:s}", "dedupe_key", "rule:7:GI-000123"));
    b = hookbody_build("servicenow", "ticket.opened", ctx, cfg, "msg_1", 0);
    assert_string_equal(json_string_value(json_object_get(b, "short_description")),
                        "xid errors: GI-000123");
    assert_string_equal(json_string_value(json_object_get(b, "urgency")), "1");
    assert_string_equal(json_string_value(json_object_get(b, "impact")), "2");
    assert_string_equal(json_string_value(json_object_get(b, "assignment_group")), "GPU Ops");
    assert_string_equal(json_string_value(json_object_get(b, "category")), "hardware");
    assert_string_equal(json_string_value(json_object_get(b, "caller_id")), "gpuinv");
    assert_string_equal(json_string_value(json_object_get(b, "cmdb_ci")), "GI-000123");
    assert_string_equal(json_string_value(json_object_get(b, "correlation_id")),
                        "rule:7:GI-000123");
    assert_non_null(
        strstr(json_string_value(json_object_get(b, "description")), "Owner team: ml-infra"));
    json_decref(b);
    assert_true(hookbody_config_ok("servicenow", cfg, err, sizeof err));
    json_object_set_new(cfg, "urgency", json_integer(4));
    assert_false(hookbody_config_ok("servicenow", cfg, err, sizeof err));
    assert_non_null(strstr(err, "urgency"));
    json_decref(cfg);
    cfg = json_object();
    assert_false(hookbody_config_ok("jira", cfg, err, sizeof err));
    assert_non_null(strstr(err, "project"));
    assert_true(hookbody_config_ok("generic", cfg, err, sizeof err));
    json_decref(cfg);
    json_decref(ctx);
}

static void test_replies(void **state)
{
    static const char jira[] =
        "{\"id\":\"10042\",\"key\":\"OPS-17\",\"self\":\"https://x/rest/api/3/issue/10042\"}";
    static const char snow[] =
        "{\"result\":{\"number\":\"INC0010042\",\"sys_id\":\"9d385017c611228701d22104cc95c371\"}}";
    char sys[32], key[128], link[512];
    (void)state;
    assert_true(hookbody_reply("jira", "https://acme.atlassian.net/rest/api/3/issue", 201, jira,
                               strlen(jira), sys, key, link));
    assert_string_equal(sys, "jira");
    assert_string_equal(key, "OPS-17");
    assert_string_equal(link, "https://acme.atlassian.net/browse/OPS-17");
    assert_true(hookbody_reply("servicenow", "https://acme.service-now.com/api/now/table/incident",
                               201, snow, strlen(snow), sys, key, link));
    assert_string_equal(sys, "servicenow");
    assert_string_equal(key, "INC0010042");
    assert_string_equal(link, "https://acme.service-now.com/nav_to.do?uri=incident.do?sys_id="
                              "9d385017c611228701d22104cc95c371");
    assert_false(hookbody_reply("jira", "https://a/x", 400, jira, strlen(jira), sys, key, link));
    assert_false(hookbody_reply("jira", "https://a/x", 201, "not json", 8, sys, key, link));
    assert_false(hookbody_reply("generic", "https://a/x", 201, jira, strlen(jira), sys, key, link));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_github_doc_vector),
        cmocka_unit_test(test_github_our_vector),
        cmocka_unit_test(test_stripe_slack_vectors),
        cmocka_unit_test(test_standard_vector),
        cmocka_unit_test(test_key_forms),
        cmocka_unit_test(test_generic_body),
        cmocka_unit_test(test_jira_body),
        cmocka_unit_test(test_summary_utf8_cut),
        cmocka_unit_test(test_servicenow_body),
        cmocka_unit_test(test_replies),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
