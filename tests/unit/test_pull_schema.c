/* Pull source kind schemas: every kind's keys come from the table that
 * validates configs, help texts are looked up by kind and key (a kind's
 * own entry first, then the shared one, else none), and secrets are the
 * keys any kind declares secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collect/pull.h"

#include <string.h>

static const json_t *kind_of(const json_t *schema, const char *kind)
{
    size_t i;
    json_t *k;

    json_array_foreach(schema, i, k) {
        if (strcmp(json_string_value(json_object_get(k, "kind")), kind) == 0)
            return k;
    }
    return NULL;
}

static const json_t *key_of(const json_t *kind, const char *name)
{
    size_t i;
    json_t *k;

    json_array_foreach(json_object_get(kind, "keys"), i, k) {
        if (strcmp(json_string_value(json_object_get(k, "name")), name) == 0)
            return k;
    }
    return NULL;
}

static void test_schema_matches_validation(void **state)
{
    json_t *schema = pull_kinds_schema();
    size_t i;
    json_t *kind;

    (void)state;
    assert_true(json_array_size(schema) >= 7);
    json_array_foreach(schema, i, kind) {
        const char *name = json_string_value(json_object_get(kind, "kind"));
        size_t j;
        json_t *key;
        assert_true(pull_kind_known(name));
        json_array_foreach(json_object_get(kind, "keys"), j, key) {
            /* Each listed key is a setting of its kind: a null value (unset)
             * passes the key check, so any refusal is about another key. */
            json_t *cfg = json_pack("{s:n}", json_string_value(json_object_get(key, "name")));
            char field[80] = "", msg[256] = "";
            if (pull_config_check(name, cfg, field, sizeof field, msg, sizeof msg) != 0)
                assert_null(strstr(msg, "is not a setting"));
            json_decref(cfg);
            if (json_is_true(json_object_get(key, "secret")))
                assert_true(pull_config_secret(json_string_value(json_object_get(key, "name"))));
        }
    }
    {
        const json_t *g = kind_of(schema, "prometheus-generic");
        assert_non_null(g);
        assert_string_equal(json_string_value(json_object_get(key_of(g, "mapping"), "type")),
                            "object");
        assert_true(json_is_true(json_object_get(key_of(g, "mapping"), "required")));
        assert_string_equal(json_string_value(json_object_get(key_of(g, "url"), "group")),
                            "either url or exporter_url");
        assert_int_equal(json_integer_value(json_object_get(key_of(g, "timeout_s"), "max")), 300);
    }
    json_decref(schema);
}

static void test_help_lookup(void **state)
{
    const char *group = "x";

    (void)state;
    /* A kind's own entry wins over the shared one. */
    assert_non_null(strstr(pull_key_help("netbox", "token", &group), "Authorization: Token"));
    assert_null(group);
    assert_non_null(strstr(pull_key_help("snipeit", "token", &group), "Bearer"));
    /* A kind without its own entry gets the shared one. */
    assert_non_null(pull_key_help("a-new-kind", "timeout_s", &group));
    assert_null(group);
    /* A key nobody wrote help for has none; it is still listed by its kind. */
    group = "x";
    assert_null(pull_key_help("a-new-kind", "regions", &group));
    assert_null(group);
    assert_string_equal(pull_key_help("slurm", "user", &group),
                        "slurmrestd user name (X-SLURM-USER-NAME)");
    assert_string_equal(group, "either sacct or slurmrestd_url");
}

static void test_secret_keys(void **state)
{
    (void)state;
    assert_true(pull_config_secret("bearer_token"));
    assert_true(pull_config_secret("token"));
    assert_false(pull_config_secret("mapping"));
    assert_false(pull_config_secret("url"));
    assert_true(pull_config_target("exporter_url"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_matches_validation),
        cmocka_unit_test(test_help_lookup),
        cmocka_unit_test(test_secret_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
