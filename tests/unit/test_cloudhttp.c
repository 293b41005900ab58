/* The cloud sources' HTTP helpers: form and query encoding, and the
 * same-origin test that keeps a next-page link from carrying a token to
 * another server. */
#include "unit.h"

#include <string.h>

#include "collect/cloudhttp.h"

static void escape(void **state)
{
    char out[32];

    (void)state;
    assert_true(cloudhttp_escape("a-Z_0.~", out, sizeof out));
    assert_string_equal(out, "a-Z_0.~");
    assert_true(cloudhttp_escape("a b/c:d=&+", out, sizeof out));
    assert_string_equal(out, "a%20b%2Fc%3Ad%3D%26%2B");
    assert_true(cloudhttp_escape("\xc3\xa9", out, sizeof out));
    assert_string_equal(out, "%C3%A9");
    /* Too long for the buffer: refused, never cut. */
    assert_false(cloudhttp_escape("////////////", out, sizeof out));
    assert_true(cloudhttp_escape("", out, 1));
    assert_string_equal(out, "");
}

static void form(void **state)
{
    char buf[64] = "";

    (void)state;
    assert_true(cloudhttp_form_add(buf, sizeof buf, "grant_type", "client_credentials"));
    assert_true(cloudhttp_form_add(buf, sizeof buf, "scope", "https://x/.default"));
    assert_string_equal(buf, "grant_type=client_credentials&scope=https%3A%2F%2Fx%2F.default");
    /* What does not fit leaves the body as it was. */
    assert_false(cloudhttp_form_add(buf, sizeof buf, "k", "v"));
    assert_string_equal(buf, "grant_type=client_credentials&scope=https%3A%2F%2Fx%2F.default");
}

static void same_origin(void **state)
{
    (void)state;
    assert_true(cloudhttp_same_origin("https://management.azure.com/subscriptions/x?a=1",
                                      "https://management.azure.com"));
    assert_true(cloudhttp_same_origin("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/base"));
    assert_true(cloudhttp_same_origin("http://h:1", "http://h:1"));
    assert_false(cloudhttp_same_origin("https://management.azure.com.evil.example/x",
                                       "https://management.azure.com"));
    assert_false(cloudhttp_same_origin("http://127.0.0.1:80801/a", "http://127.0.0.1:8080"));
    assert_false(
        cloudhttp_same_origin("http://management.azure.com/x", "https://management.azure.com"));
    assert_false(cloudhttp_same_origin("https://management.azure.com@evil/x",
                                       "https://management.azure.com"));
    assert_false(cloudhttp_same_origin("/relative", "https://management.azure.com"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escape),
        cmocka_unit_test(form),
        cmocka_unit_test(same_origin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
