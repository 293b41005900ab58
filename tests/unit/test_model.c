/* Unit tests for src/core/model.c: role names, parsing, the permission
 * ladder with the pusher role apart from it, and resource states. */
#include "unit.h"

#include "core/model.h"

static void test_role_names(void **state)
{
    assert_string_equal(gi_role_name(GI_ROLE_NONE), "none");
    assert_string_equal(gi_role_name(GI_ROLE_PUSHER), "pusher");
    assert_string_equal(gi_role_name(GI_ROLE_VIEWER), "viewer");
    assert_string_equal(gi_role_name(GI_ROLE_EDITOR), "editor");
    assert_string_equal(gi_role_name(GI_ROLE_ADMIN), "admin");
    assert_string_equal(gi_role_name((enum gi_role)99), "none");
    assert_string_equal(gi_role_name((enum gi_role) - 1), "none");
}

static void test_role_parse(void **state)
{
    static const enum gi_role roles[] = {GI_ROLE_PUSHER, GI_ROLE_VIEWER, GI_ROLE_EDITOR,
                                         GI_ROLE_ADMIN};
    enum gi_role r = GI_ROLE_NONE;

    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) {
        r = GI_ROLE_NONE;
        assert_status(gi_role_parse(gi_role_name(roles[i]), &r), GI_OK);
        assert_int_equal(r, roles[i]);
    }
    r = GI_ROLE_VIEWER;
    assert_status(gi_role_parse("none", &r), GI_INVALID); /* not grantable */
    assert_status(gi_role_parse("", &r), GI_INVALID);
    assert_status(gi_role_parse(NULL, &r), GI_INVALID);
    assert_status(gi_role_parse("Admin", &r), GI_INVALID);
    assert_status(gi_role_parse("admin ", &r), GI_INVALID);
    assert_status(gi_role_parse("administrator", &r), GI_INVALID);
    assert_status(gi_role_parse("adm", &r), GI_INVALID);
    assert_int_equal(r, GI_ROLE_VIEWER); /* untouched on failure */
}

static void test_role_ladder(void **state)
{
    /* allowed[have][need], in enum order none, pusher, viewer, editor, admin. */
    static const bool allowed[5][5] = {
        /* none   */ {true, false, false, false, false},
        /* pusher */ {true, true, false, false, false},
        /* viewer */ {true, false, true, false, false},
        /* editor */ {true, true, true, true, false},
        /* admin  */ {true, true, true, true, true},
    };
    for (int have = 0; have < 5; have++)
        for (int need = 0; need < 5; need++)
            if (gi_role_allows((enum gi_role)have, (enum gi_role)need) != allowed[have][need])
                fail_msg("gi_role_allows(%s, %s) should be %s", gi_role_name((enum gi_role)have),
                         gi_role_name((enum gi_role)need), allowed[have][need] ? "true" : "false");
}

static void test_states(void **state)
{
    assert_true(gi_state_valid("available"));
    assert_true(gi_state_valid("in_use"));
    assert_true(gi_state_valid("reserved"));
    assert_true(gi_state_valid("maintenance"));
    assert_true(gi_state_valid("retired"));
    assert_false(gi_state_valid(NULL));
    assert_false(gi_state_valid(""));
    assert_false(gi_state_valid("in-use"));
    assert_false(gi_state_valid("Available"));
    assert_false(gi_state_valid("available "));
    assert_false(gi_state_valid("allocated"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_role_names),
        cmocka_unit_test(test_role_parse),
        cmocka_unit_test(test_role_ladder),
        cmocka_unit_test(test_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
