/* Unit tests for the push-back's field model (src/collect/push_assets.c):
 * gpuinv's values and the remote's as text, the stage → NetBox status
 * mapping, and the plan that splits fields into written, already synced,
 * held back by "keep theirs" and conflicting. */
#include "unit.h"

#include "collect/push_assets.h"

#include <string.h>

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = parse(want);
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
    assert_true(json_equal((json_t *)got, w) || (printf("got %s\n", g), 0));
    free(g);
    json_decref(w);
}

static void test_netbox_status(void **state)
{
    json_t *cfg = parse("{\"push_statuses\":{\"spare\":\"offline\"}}");
    (void)state;
    assert_string_equal(push_netbox_status(NULL, "active"), "active");
    assert_string_equal(push_netbox_status(NULL, "spare"), "inventory");
    assert_string_equal(push_netbox_status(NULL, "diagnostic_repair"), "failed");
    assert_string_equal(push_netbox_status(NULL, "decommissioned"), "decommissioning");
    assert_string_equal(push_netbox_status(cfg, "spare"), "offline");
    assert_string_equal(push_netbox_status(cfg, "ordered"), "planned");
    assert_null(push_netbox_status(NULL, "lost"));
    json_decref(cfg);
}

static void test_ours_and_theirs(void **state)
{
    json_t *asset =
        parse("{\"stage\":\"spare\",\"location\":{\"datacenter\":\"fra1\",\"room\":null,"
              "\"rack\":\"R07\",\"u\":22,\"storage\":null}}");
    json_t *bare = parse("{\"stage\":\"active\",\"location\":{\"datacenter\":null}}");
    json_t *cfg = parse("{\"push_status_ids\":{\"spare\":4}}");
    json_t *dev =
        parse("{\"id\":101,\"site\":{\"id\":1,\"name\":\"fra1\"},\"rack\":null,"
              "\"position\":10.0,\"status\":{\"value\":\"active\",\"label\":\"Active\"}}");
    json_t *hw = parse("{\"id\":201,\"location\":{\"id\":7,\"name\":\"fra1\"},"
                       "\"status_label\":{\"id\":2,\"name\":\"Ready to Deploy\"}}");
    json_t *o;
    (void)state;

    o = push_ours("netbox", NULL, asset);
    assert_json(
        o, "{\"site\":\"fra1\",\"rack\":\"R07\",\"position\":\"22\",\"status\":\"inventory\"}");
    json_decref(o);
    o = push_ours("snipeit", cfg, asset);
    assert_json(o, "{\"location\":\"fra1\",\"status\":\"4\"}");
    json_decref(o);
    /* A stage without a status label id, a data center unknown: absent. */
    o = push_ours("snipeit", cfg, bare);
    assert_json(o, "{}");
    json_decref(o);
    o = push_theirs("netbox", dev);
    assert_json(o, "{\"site\":\"fra1\",\"position\":\"10\",\"status\":\"active\"}");
    json_decref(o);
    o = push_theirs("snipeit", hw);
    assert_json(o, "{\"location\":\"fra1\",\"status\":\"2\"}");
    json_decref(o);
    json_decref(asset);
    json_decref(bare);
    json_decref(cfg);
    json_decref(dev);
    json_decref(hw);
}

static void test_plan(void **state)
{
    json_t *ours =
        parse("{\"site\":\"fra1\",\"rack\":\"R03\",\"position\":\"6\",\"status\":\"failed\","
              "\"room\":\"hall-2\"}");
    json_t *theirs =
        parse("{\"site\":\"fra1\",\"rack\":\"R99\",\"position\":\"9\",\"status\":\"active\"}");
    json_t *base = parse("{\"site\":{\"value\":\"fra1\",\"held\":null},"
                         "\"rack\":{\"value\":\"R02\",\"held\":null},"
                         "\"position\":{\"value\":\"5\",\"held\":\"6\"},"
                         "\"status\":{\"value\":\"active\",\"held\":null}}");
    json_t *write = json_object(), *seen = json_object(), *conflicts = json_array();
    (void)state;

    push_plan(ours, theirs, base, write, seen, conflicts);
    /* site: already there; rack: changed remotely (conflict); position:
     * held back by keep theirs while ours is 6; status: the remote still
     * holds the synced value (write); room: never synced (write). */
    assert_json(seen, "{\"site\":\"fra1\"}");
    assert_json(write, "{\"status\":\"failed\",\"room\":\"hall-2\"}");
    assert_json(conflicts,
                "[{\"field\":\"rack\",\"ours\":\"R03\",\"theirs\":\"R99\",\"base\":\"R02\"}]");
    json_decref(write);
    json_decref(seen);
    json_decref(conflicts);

    /* Once ours changes again, a held field is planned like any other. */
    json_object_set_new(ours, "position", json_string("7"));
    write = json_object();
    seen = json_object();
    conflicts = json_array();
    push_plan(ours, theirs, base, write, seen, conflicts);
    assert_non_null(json_object_get(json_array_get(conflicts, 1), "field"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(conflicts, 1), "field")),
                        "position");
    json_decref(write);
    json_decref(seen);
    json_decref(conflicts);
    json_decref(ours);
    json_decref(theirs);
    json_decref(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netbox_status),
        cmocka_unit_test(test_ours_and_theirs),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
