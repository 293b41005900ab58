/* Sign-in throttle: failures per key in a window, reset, reuse of slots,
 * and the bound on concurrent password verifications. */
#include "unit.h"

#include "http/throttle.h"

#include <pthread.h>
#include <string.h>

static void test_failures_lock_a_key_for_the_window(void **state)
{
    struct throttle *t = throttle_new();
    int64_t now = 1000000;

    (void)state;
    assert_non_null(t);
    assert_int_equal(throttle_wait(t, "user:ann", 3, now), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(throttle_wait(t, "user:ann", 3, now), 0);
        throttle_failed(t, "user:ann", now);
    }
    /* Locked until the window that began at `now` ends. */
    assert_int_equal(throttle_wait(t, "user:ann", 3, now), THROTTLE_WINDOW);
    assert_int_equal(throttle_wait(t, "user:ann", 3, now + 100), THROTTLE_WINDOW - 100);
    assert_int_equal(throttle_wait(t, "user:ann", 4, now + 100), 0); /* a looser limit */
    assert_int_equal(throttle_wait(t, "user:bob", 3, now + 100), 0); /* another key */
    /* A new window starts afresh. */
    assert_int_equal(throttle_wait(t, "user:ann", 3, now + THROTTLE_WINDOW), 0);
    throttle_failed(t, "user:ann", now + THROTTLE_WINDOW);
    assert_int_equal(throttle_wait(t, "user:ann", 1, now + THROTTLE_WINDOW), THROTTLE_WINDOW);
    throttle_free(t);
    throttle_free(NULL);
}

static void test_reset_forgets_failures(void **state)
{
    struct throttle *t = throttle_new();
    int64_t now = 2000000;

    (void)state;
    throttle_failed(t, "user:cy", now);
    throttle_failed(t, "user:cy", now);
    throttle_failed(t, "addr:10.0.0.1", now);
    assert_true(throttle_wait(t, "user:cy", 2, now) > 0);
    throttle_reset(t, "user:cy");
    assert_int_equal(throttle_wait(t, "user:cy", 2, now), 0);
    assert_true(throttle_wait(t, "addr:10.0.0.1", 1, now) > 0); /* untouched */
    throttle_free(t);
}

static void test_many_keys_reuse_slots(void **state)
{
    struct throttle *t = throttle_new();
    char key[64];
    int64_t now = 3000000;

    (void)state;
    /* Far more keys than slots: the table never fails, and a key counted
     * last is still remembered. */
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "user:flood-%d", i);
        throttle_failed(t, key, now);
    }
    throttle_failed(t, "user:last", now);
    assert_true(throttle_wait(t, "user:last", 1, now) > 0);
    throttle_free(t);
}

static void test_work_is_bounded(void **state)
{
    struct throttle *t = throttle_new();

    (void)state;
    for (int i = 0; i < THROTTLE_WORKERS; i++)
        assert_true(throttle_work_begin(t));
    /* Every slot taken, nobody finishing: a caller waits its bound out
     * and is refused. */
    assert_false(throttle_work_begin(t));
    throttle_work_end(t);
    assert_true(throttle_work_begin(t));
    for (int i = 0; i < THROTTLE_WORKERS; i++)
        throttle_work_end(t);
    throttle_free(t);
}

struct worker {
    struct throttle *t;
    bool got;
};

static void *hold_then_release(void *arg)
{
    struct worker *w = arg;

    w->got = throttle_work_begin(w->t);
    if (w->got)
        throttle_work_end(w->t);
    return NULL;
}

static void test_waiter_gets_a_freed_slot(void **state)
{
    struct throttle *t = throttle_new();
    struct worker w = {t, false};
    pthread_t th;

    (void)state;
    for (int i = 0; i < THROTTLE_WORKERS; i++)
        assert_true(throttle_work_begin(t));
    assert_int_equal(pthread_create(&th, NULL, hold_then_release, &w), 0);
    /* Freeing one slot lets the waiting thread in (it waits up to
     * THROTTLE_WAIT_MS, far longer than this takes). */
    throttle_work_end(t);
    pthread_join(th, NULL);
    assert_true(w.got);
    for (int i = 1; i < THROTTLE_WORKERS; i++)
        throttle_work_end(t);
    throttle_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failures_lock_a_key_for_the_window),
        cmocka_unit_test(test_reset_forgets_failures),
        cmocka_unit_test(test_many_keys_reuse_slots),
        cmocka_unit_test(test_work_is_bounded),
        cmocka_unit_test(test_waiter_gets_a_freed_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
