/* Process-to-owner mapping over the fixture tree tests/fixtures/proc: one
 * process per cgroup pattern. */
#include "collect/procmap.h"
#include "core/status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef PROC_FIXTURES
#error "PROC_FIXTURES must name tests/fixtures/proc"
#endif

#define H1 "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define H2 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define H3 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H4 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* A fresh process observation for pid, as gi_obs_add_proc makes it. */
static struct gi_proc_obs *fresh(struct gi_obs_set *set, int64_t pid)
{
    struct gi_proc_obs *p = gi_obs_add_proc(set);
    assert_non_null(p);
    p->pid = pid;
    return p;
}

/* Maps pid from the fixtures and checks every field. */
static void expect(int64_t pid, int64_t uid, const char *container, const char *pod,
                   const char *name)
{
    struct gi_obs_set set = {0};
    struct gi_proc_obs *p = fresh(&set, pid);
    char user[64];

    assert_int_equal(procmap_fill(PROC_FIXTURES, p), GI_OK);
    assert_int_equal(p->uid, uid);
    procmap_user_name(uid, user, sizeof user);
    assert_string_equal(p->user, user);
    assert_string_equal(p->container, container);
    assert_string_equal(p->pod_uid, pod);
    assert_string_equal(p->name, name);
    gi_obs_free(&set);
}

static void test_docker_systemd(void **state) { expect(1001, 1000, H1, "", "python3"); }

static void test_docker_cgroupfs_v1(void **state) { expect(1002, 0, H2, "", "train"); }

static void test_containerd_systemd(void **state)
{
    expect(1003, 1000, H3, "1f2d8c3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f", "torchrun");
}

static void test_crio(void **state)
{
    expect(1004, 1001, H4, "0a0b0c0d-1111-2222-3333-444455556666", "vllm");
}

static void test_kubepods_cgroupfs(void **state)
{
    expect(1005, 0, H1, "6b0c1d2e-3f40-4152-8a6b-7c8d9e0f1a2b", "python");
}

static void test_libpod(void **state) { expect(1006, 1000, H2, "", "ollama"); }

static void test_host_process(void **state) { expect(1007, 4242424, "", "", "nvtop"); }

static void test_containerd_colon_path(void **state)
{
    expect(1008, 0, H3, "9d8c7b6a-5f4e-4d3c-8b2a-190817263544", "triton");
}

static void test_no_cgroup_file(void **state) { expect(1009, 33, "", "", "orphan"); }

static void test_conmon_is_not_the_container(void **state)
{
    expect(1010, 0, "", "aabbccdd-eeff-4011-8233-445566778899", "conmon");
}

static void test_malformed(void **state)
{
    struct gi_obs_set set = {0};
    struct gi_proc_obs *p = fresh(&set, 1011);

    /* A uid past 32 bits is no uid; junk cgroup lines find nothing. */
    assert_int_equal(procmap_fill(PROC_FIXTURES, p), GI_OK);
    assert_int_equal(p->uid, -1);
    assert_string_equal(p->user, "");
    assert_string_equal(p->container, "");
    assert_string_equal(p->pod_uid, "");
    assert_string_equal(p->name, "");
    gi_obs_free(&set);
}

static void test_gone(void **state)
{
    struct gi_obs_set set = {0};
    struct gi_proc_obs *p = fresh(&set, 999999);

    assert_int_equal(procmap_fill(PROC_FIXTURES, p), GI_NOT_FOUND);
    assert_int_equal(p->uid, -1);
    assert_string_equal(p->user, "");
    p->pid = 0;
    assert_int_equal(procmap_fill(PROC_FIXTURES, p), GI_INVALID);
    assert_int_equal(procmap_fill("/nonexistent-root", fresh(&set, 1)), GI_NOT_FOUND);
    gi_obs_free(&set);
}

static void test_fill_all_keeps_name(void **state)
{
    struct gi_obs_set set = {0};

    fresh(&set, 1003);
    fresh(&set, 424242);
    struct gi_proc_obs *p = fresh(&set, 1004);
    snprintf(p->name, sizeof p->name, "%s", "given");
    assert_int_equal(procmap_fill_all(PROC_FIXTURES, &set), GI_OK);
    assert_string_equal(set.procs[0].container, H3);
    assert_int_equal(set.procs[1].uid, -1);
    assert_string_equal(set.procs[2].name, "given");
    assert_string_equal(set.procs[2].container, H4);
    gi_obs_free(&set);
}

static void test_parse_uid(void **state)
{
    int64_t uid = -1;

    assert_int_equal(procmap_parse_uid("Name:\tx\nUid:\t1234\t0\t0\t0\n", &uid), GI_OK);
    assert_int_equal(uid, 1234);
    assert_int_equal(procmap_parse_uid("Uid: 4294967295 1 1 1", &uid), GI_OK);
    assert_int_equal(uid, INT64_C(4294967295));
    assert_int_equal(procmap_parse_uid("Uid:\t4294967296\n", &uid), GI_NOT_FOUND);
    assert_int_equal(procmap_parse_uid("Name:\tUid: 5\n", &uid), GI_NOT_FOUND);
    assert_int_equal(procmap_parse_uid("XUid:\t5\nGid:\t5\n", &uid), GI_NOT_FOUND);
    assert_int_equal(procmap_parse_uid("Uid:\t\n", &uid), GI_NOT_FOUND);
    assert_int_equal(procmap_parse_uid("", &uid), GI_NOT_FOUND);
}

static void test_parse_cgroup(void **state)
{
    char cid[PROCMAP_ID_LEN], pod[PROCMAP_POD_UID_LEN];

    /* Upper-case ids are lower-cased; 70 hex digits are no id. */
    assert_int_equal(
        procmap_parse_cgroup("0::/docker/ABCDEF" H3 "\n", cid, sizeof cid, pod, sizeof pod),
        GI_NOT_FOUND);
    assert_int_equal(procmap_parse_cgroup("1:cpu:/docker/3F4E5D6C7B8A99887766554433221100FFEEDDCC"
                                          "BBAA00112233445566778899\n",
                                          cid, sizeof cid, pod, sizeof pod),
                     GI_OK);
    assert_string_equal(cid, H1);
    /* The innermost container wins. */
    assert_int_equal(
        procmap_parse_cgroup("0::/docker/" H1 "/docker/" H4 "\n", cid, sizeof cid, pod, sizeof pod),
        GI_OK);
    assert_string_equal(cid, H4);
    assert_int_equal(procmap_parse_cgroup("0::/system.slice/docker-3F4E5D6C7B8A.scope", cid,
                                          sizeof cid, pod, sizeof pod),
                     GI_OK);
    assert_string_equal(cid, "3f4e5d6c7b8a");
    assert_string_equal(pod, "");

    /* Guaranteed QoS has no class in the slice name. */
    assert_int_equal(
        procmap_parse_cgroup("0::/kubepods.slice/kubepods-pod01234567_89ab_cdef_0123_456789abcdef"
                             ".slice/cri-containerd-" H2 ".scope\n",
                             cid, sizeof cid, pod, sizeof pod),
        GI_OK);
    assert_string_equal(pod, "01234567-89ab-cdef-0123-456789abcdef");
    assert_string_equal(cid, H2);

    /* cgroupfs guaranteed pod: /kubepods/pod<uid>/<id>. */
    assert_int_equal(procmap_parse_cgroup("4:pids:/kubepods/pod01234567-89ab-cdef-0123-"
                                          "456789abcdef/" H1,
                                          cid, sizeof cid, pod, sizeof pod),
                     GI_OK);
    assert_string_equal(pod, "01234567-89ab-cdef-0123-456789abcdef");
    assert_string_equal(cid, H1);

    /* Near misses. */
    assert_int_equal(procmap_parse_cgroup("0::/kubepods.slice/kubepods-podnot-a-uid.slice\n"
                                          "0::/pod01234567-89ab-cdef-0123-456789abcdeX/\n"
                                          "0::/docker-" H1 ".service\n"
                                          "0::/libpod-conmon-" H1 ".scope\n"
                                          "0:/docker/" H1 "\n",
                                          cid, sizeof cid, pod, sizeof pod),
                     GI_NOT_FOUND);
    assert_string_equal(cid, "");
    assert_string_equal(pod, "");
    assert_int_equal(procmap_parse_cgroup("", cid, sizeof cid, pod, sizeof pod), GI_NOT_FOUND);

    /* Too small an output buffer gets nothing rather than half an id. */
    char small[8];
    assert_int_equal(
        procmap_parse_cgroup("0::/docker/" H1 "\n", small, sizeof small, pod, sizeof pod),
        GI_NOT_FOUND);
    assert_string_equal(small, "");
}

static void test_user_name(void **state)
{
    char user[64];

    procmap_user_name(0, user, sizeof user);
    assert_string_equal(user, "root");
    procmap_user_name(4242424, user, sizeof user);
    assert_string_equal(user, "4242424");
    procmap_user_name(-1, user, sizeof user);
    assert_string_equal(user, "-1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docker_systemd),
        cmocka_unit_test(test_docker_cgroupfs_v1),
        cmocka_unit_test(test_containerd_systemd),
        cmocka_unit_test(test_crio),
        cmocka_unit_test(test_kubepods_cgroupfs),
        cmocka_unit_test(test_libpod),
        cmocka_unit_test(test_host_process),
        cmocka_unit_test(test_containerd_colon_path),
        cmocka_unit_test(test_no_cgroup_file),
        cmocka_unit_test(test_conmon_is_not_the_container),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_gone),
        cmocka_unit_test(test_fill_all_keeps_name),
        cmocka_unit_test(test_parse_uid),
        cmocka_unit_test(test_parse_cgroup),
        cmocka_unit_test(test_user_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
