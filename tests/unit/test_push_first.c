/* Unit tests for the first push of a field with no last-synced value
 * (src/collect/push_assets.c push_plan): the remote's current value, read
 * before the write, decides. Empty there: written; ours already: seen;
 * another value: a conflict with no base, as a changed field is later. */
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

static void test_first_push(void **state)
{
    json_t *ours = parse("{\"site\":\"fra1\",\"rack\":\"R07\",\"position\":\"22\",\"status\":"
                         "\"active\"}");
    /* none of them was synced: the remote had no rack or position when
     * pulled, and site and status were never read */
    json_t *theirs = parse("{\"site\":\"fra1\",\"rack\":\"R50\",\"status\":\"offline\"}");
    json_t *base = json_object();
    json_t *write = json_object(), *seen = json_object(), *conflicts = json_array();
    (void)state;

    push_plan(ours, theirs, base, write, seen, conflicts);
    assert_json(seen, "{\"site\":\"fra1\"}");
    assert_json(write, "{\"position\":\"22\"}");
    assert_int_equal(json_array_size(conflicts), 2);
    assert_json(json_array_get(conflicts, 0),
                "{\"field\":\"rack\",\"ours\":\"R07\",\"theirs\":\"R50\",\"base\":null}");
    assert_json(json_array_get(conflicts, 1),
                "{\"field\":\"status\",\"ours\":\"active\",\"theirs\":\"offline\",\"base\":null}");
    json_decref(write);
    json_decref(seen);
    json_decref(conflicts);

    /* With NULL for no bases at all, the same. */
    write = json_object();
    seen = json_object();
    conflicts = json_array();
    push_plan(ours, theirs, NULL, write, seen, conflicts);
    assert_json(write, "{\"position\":\"22\"}");
    assert_int_equal(json_array_size(conflicts), 2);
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
        cmocka_unit_test(test_first_push),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
