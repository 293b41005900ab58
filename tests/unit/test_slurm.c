/* Slurm accounting parsers: host lists, TRES, times, ids, sacct
 * --parsable2 and --json (dbv0.0.37 and data_parser v0.0.41), slurmrestd
 * jobs, malformed input. Fixtures live in tests/fixtures/slurm/. */
#include "unit.h"

#include "core/util.h"
#include "parse/slurm.h"

#include <math.h>
#include <string.h>

static char *slurp(const char *name, size_t *len) { return unit_fixture("slurm", name, len); }

/* Expands s and checks the names joined by spaces. */
static void expands_to(const char *s, const char *want)
{
    struct slurm_node *v = NULL;
    size_t n = 0, at = 0;
    char got[4096] = "";

    assert_status(slurm_hostlist_expand(s, SLURM_MAX_NODES, &v, &n), GI_OK);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", i ? " " : "", v[i].name);
    free(v);
    if (strcmp(got, want) != 0)
        fail_msg("expand \"%s\": got \"%s\", want \"%s\"", s, got, want);
}

static void test_hostlist(void **state)
{
    struct slurm_node *v = NULL;
    size_t n = 9;

    (void)state;
    expands_to("gpu[01-04,07]", "gpu01 gpu02 gpu03 gpu04 gpu07");
    expands_to("a[1-2],b3", "a1 a2 b3");
    expands_to("node[001-003],login1", "node001 node002 node003 login1");
    expands_to("rack[0-1]_blade[0-1]", "rack0_blade0 rack0_blade1 rack1_blade0 rack1_blade1");
    expands_to("gpu[8-11]", "gpu8 gpu9 gpu10 gpu11");
    expands_to("gpu[098-101]", "gpu098 gpu099 gpu100 gpu101");
    expands_to("single", "single");
    expands_to("n[5]", "n5");
    expands_to("None assigned", "");
    expands_to("", "");
    /* The cap keeps the first names. */
    assert_status(slurm_hostlist_expand("x[1-100]", 3, &v, &n), GI_OK);
    assert_int_equal(n, 3);
    assert_string_equal(v[2].name, "x3");
    assert_int_equal(v[2].nidx, -1);
    free(v);
    /* Malformed lists are refused, never half-read. */
    static const char *const bad[] = {"gpu[01-", "gpu[]",   "gpu[3-1]",   "gpu[a-b]",
                                      "a,,b",    "gpu[1-2", "gpu]1[",     "x[[1]]",
                                      "a b",     ",",       "x[1-200000]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = (struct slurm_node *)1;
        n = 9;
        if (slurm_hostlist_expand(bad[i], SLURM_MAX_NODES, &v, &n) != GI_INVALID)
            fail_msg("\"%s\" should be invalid", bad[i]);
        assert_null(v);
        assert_int_equal(n, 0);
    }
}

static void test_tres(void **state)
{
    int64_t g;
    char type[64];
    double u, m;

    (void)state;
    slurm_tres_gpus("billing=16,cpu=16,gres/gpu:a100=2,gres/gpu=2,mem=128G,node=1", &g, type,
                    sizeof type);
    assert_int_equal(g, 2); /* not 4: typed entries repeat the untyped one */
    assert_string_equal(type, "a100");
    slurm_tres_gpus("cpu=4,gres/gpu=4", &g, type, sizeof type);
    assert_int_equal(g, 4);
    assert_string_equal(type, "");
    slurm_tres_gpus("cpu=4,gres/gpu:a100=1,gres/gpu:v100=2", &g, type, sizeof type);
    assert_int_equal(g, 3);
    assert_string_equal(type, "a100");
    slurm_tres_gpus("cpu=4,gres/shard=2,gres/mps=100", &g, type, sizeof type);
    assert_int_equal(g, -1);
    slurm_tres_gpus("", &g, type, sizeof type);
    assert_int_equal(g, -1);
    slurm_tres_gpus("gres/gpu=lots,cpu", &g, type, sizeof type);
    assert_int_equal(g, -1);
    slurm_tres_gpus(NULL, &g, type, sizeof type);
    assert_int_equal(g, -1);

    slurm_tres_usage("cpu=00:00:11,energy=0,fs/disk=87613,gres/gpumem=36266M,gres/gpuutil=100,"
                     "mem=628748K,pages=0,vmem=0",
                     &u, &m);
    assert_true(u == 100);
    assert_true(m == 36266);
    slurm_tres_usage("gres/gpumem=38027657216,gres/gpuutil=200", &u, &m);
    assert_true(u == 200);
    assert_true(fabs(m - 36266.0) < 1);
    slurm_tres_usage("gres/gpumem=2G", &u, &m);
    assert_true(isnan(u));
    assert_true(m == 2048);
    slurm_tres_usage("gres/gpumem=1T,gres/gpuutil=x", &u, &m);
    assert_true(isnan(u));
    assert_true(m == 1048576);
    slurm_tres_usage("gres/gpumem=512K", &u, &m);
    assert_true(m == 0.5);
    slurm_tres_usage("", &u, &m);
    assert_true(isnan(u) && isnan(m));
}

static void test_times(void **state)
{
    (void)state;
    assert_int_equal(slurm_time("1767225600"), 1767225600);
    assert_int_equal(slurm_time("2026-01-01T00:00:00"), 1767225600);
    assert_int_equal(slurm_time("2026-01-01T01:30:00"), 1767225600 + 5400);
    assert_int_equal(slurm_time("Unknown"), -1);
    assert_int_equal(slurm_time("None"), -1);
    assert_int_equal(slurm_time(""), -1);
    assert_int_equal(slurm_time(NULL), -1);
    assert_int_equal(slurm_time("0"), -1);
    assert_int_equal(slurm_time("4294967294"), -1); /* NO_VAL */
    assert_int_equal(slurm_time("2026-13-01T00:00:00"), -1);
    assert_int_equal(slurm_time("2026-01-01 00:00:00"), -1);
    assert_int_equal(slurm_time("2026-01-01T00:00:00Z"), -1);
    assert_int_equal(slurm_time("00:01.608"), -1); /* a duration, not a time */
}

static void test_gpu_idx(void **state)
{
    struct slurm_node n = {.nidx = -1};

    (void)state;
    slurm_node_idx(&n, "0-3");
    assert_int_equal(n.nidx, 4);
    assert_int_equal(n.idx[3], 3);
    slurm_node_idx(&n, "0,2,5-6");
    assert_int_equal(n.nidx, 4);
    assert_int_equal(n.idx[1], 2);
    assert_int_equal(n.idx[3], 6);
    slurm_node_idx(&n, "N/A");
    assert_int_equal(n.nidx, -1);
    slurm_node_idx(&n, "");
    assert_int_equal(n.nidx, -1);
}

static const struct slurm_job *find(const struct slurm_jobs *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].id, id) == 0)
            return &l->items[i];
    fail_msg("job %s not found", id);
    return NULL;
}

/* The exact output of the command pull_slurm.c runs: the unit separator
 * between fields, no header, free text last. */
static void test_parsable_us(void **state)
{
    size_t len;
    char *buf = slurp("sacct-parsable2-us.txt", &len), err[256] = "";
    struct slurm_jobs l;
    const struct slurm_job *j;

    (void)state;
    assert_status(slurm_parse_parsable(buf, len, '\x1f', &l, err, sizeof err), GI_OK);
    /* 9 rows: a pending array and a step are skipped, and 2 bad lines. */
    assert_int_equal(l.n, 7);
    assert_int_equal(l.skipped, 4);
    assert_true(l.warning[0] != '\0');

    j = find(&l, "4242");
    assert_int_equal(j->id_raw, 4242);
    assert_string_equal(j->cluster, "hpc1");
    assert_string_equal(j->user, "alice");
    assert_string_equal(j->account, "ml-train");
    assert_string_equal(j->partition, "gpu");
    assert_string_equal(j->qos, "normal");
    assert_string_equal(j->name, "train|resnet"); /* '|' is text here */
    assert_string_equal(j->state, "COMPLETED");
    assert_int_equal(j->gpus, 4);
    assert_string_equal(j->gpu_type, "a100");
    assert_int_equal(j->nnodes, 2);
    assert_string_equal(j->nodes[0].name, "gpu01");
    assert_string_equal(j->nodes[1].name, "gpu02");
    assert_int_equal(j->nodes[0].nidx, -1);
    assert_int_equal(j->submit, 1767222000);
    assert_int_equal(j->start, 1767225600);
    assert_int_equal(j->end, 1767232800);
    assert_int_equal(j->elapsed, 7200);
    assert_true(isnan(j->gpu_util_sum) && isnan(j->gpu_mem_mib));

    j = find(&l, "4299_7"); /* an array task keeps its own JobIDRaw */
    assert_int_equal(j->id_raw, 4300);
    assert_string_equal(j->state, "RUNNING");
    assert_int_equal(j->end, -1); /* running: open end */
    assert_int_equal(j->gpus, 2);

    j = find(&l, "4310+0");                     /* heterogeneous component */
    assert_string_equal(j->state, "CANCELLED"); /* "CANCELLED by 129276" */
    assert_int_equal(j->nnodes, 3);
    assert_string_equal(j->nodes[2].name, "login1");
    assert_int_equal(j->gpus, 3);
    j = find(&l, "4310+1");
    assert_int_equal(j->id_raw, 4311);
    assert_int_equal(j->gpus, -1); /* no GPUs in its TRES */

    j = find(&l, "4400"); /* only typed TRES recorded */
    assert_int_equal(j->gpus, 8);
    assert_string_equal(j->gpu_type, "h100");
    assert_int_equal(j->nnodes, 4);
    assert_string_equal(j->nodes[3].name, "rack1_blade1");

    j = find(&l, "4402"); /* pending: no start, no account, no QOS */
    assert_int_equal(j->start, -1);
    assert_int_equal(j->end, -1);
    assert_string_equal(j->account, "");
    assert_int_equal(j->gpus, -1);

    j = find(&l, "4403"); /* usage TRES: Tot gpuutil, Max gpumem */
    assert_true(j->gpu_util_sum == 150);
    assert_true(fabs(j->gpu_mem_mib - 36266.0) < 1);
    slurm_jobs_free(&l);
    slurm_jobs_free(&l); /* freeing twice is harmless */
    free(buf);
}

/* '|' as sacct -P prints by default, a header line naming the columns,
 * local times (%FT%T), Unknown and None. */
static void test_parsable_header(void **state)
{
    size_t len;
    char *buf = slurp("sacct-parsable2-header.txt", &len), err[256] = "";
    struct slurm_jobs l;
    const struct slurm_job *j;

    (void)state;
    assert_status(slurm_parse_parsable(buf, len, '|', &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.skipped, 0);
    j = find(&l, "5001");
    assert_string_equal(j->name, "name|with|pipes");
    assert_string_equal(j->qos, ""); /* not in this header */
    assert_int_equal(j->start, 1767225600 + 3600);
    assert_int_equal(j->end, 1767225600 + 9000);
    assert_int_equal(j->gpus, 2);
    assert_int_equal(j->elapsed, 5400);
    j = find(&l, "5002");
    assert_int_equal(j->end, -1);
    assert_int_equal(j->nnodes, 3);
    assert_string_equal(j->nodes[2].name, "b3");
    j = find(&l, "5003");
    assert_int_equal(j->submit, -1);
    assert_int_equal(j->start, -1);
    assert_int_equal(j->nnodes, 0);
    slurm_jobs_free(&l);
    free(buf);

    /* CRLF line ends and an empty input. */
    {
#define US "\x1f"
        const char crlf[] = "77" US "77" US "hpc" US "u" US "a" US "p" US "q" US "n1" US "1" US
                            "2" US "3" US "1" US "COMPLETED" US "gres/gpu=1" US US US "job\r\n";
#undef US
        assert_status(slurm_parse_parsable(crlf, sizeof crlf - 1, '\x1f', &l, err, sizeof err),
                      GI_OK);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].name, "job");
        assert_int_equal(l.items[0].end, 3);
        slurm_jobs_free(&l);
        assert_status(slurm_parse_parsable("", 0, '|', &l, err, sizeof err), GI_OK);
        assert_int_equal(l.n, 0);
        slurm_jobs_free(&l);
    }
}

/* dbv0.0.37 (21.08): state.current is a string, and the job's
 * time.start is the eligible time: the earliest step start is used. */
static void test_json_v37(void **state)
{
    size_t len;
    char *buf = slurp("sacct-dbv0.0.37.json", &len), err[256] = "";
    struct slurm_jobs l;
    const struct slurm_job *j;

    (void)state;
    assert_status(slurm_parse_json(buf, len, &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.skipped, 1); /* no job_id */
    j = find(&l, "3100");
    assert_string_equal(j->state, "COMPLETED");
    assert_int_equal(j->start, 1767225600); /* the batch step, not eligible 1767225000 */
    assert_int_equal(j->end, 1767229200);
    assert_int_equal(j->gpus, 4);
    assert_int_equal(j->nnodes, 2);
    assert_string_equal(j->nodes[1].name, "gpu04");
    assert_true(j->gpu_util_sum == 320);
    assert_true(j->gpu_mem_mib == 40960);
    j = find(&l, "3200_3");
    assert_int_equal(j->id_raw, 3203);
    assert_string_equal(j->state, "FAILED");
    /* No steps: end - elapsed. */
    assert_int_equal(j->start, 1767226200 - 600);
    slurm_jobs_free(&l);
    free(buf);
}

/* data_parser v0.0.41: wrapped numbers, state arrays, typed TRES, array
 * tasks, a pending array, a heterogeneous component. */
static void test_json_v41(void **state)
{
    size_t len;
    char *buf = slurp("sacct-v0.0.41.json", &len), err[256] = "";
    struct slurm_jobs l;
    const struct slurm_job *j;

    (void)state;
    assert_status(slurm_parse_json(buf, len, &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.skipped, 1); /* 4299_[8-10%2] */
    j = find(&l, "4242");
    assert_int_equal(j->gpus, 4); /* gpu + gpu:a100 do not add up */
    assert_string_equal(j->gpu_type, "a100");
    assert_int_equal(j->start, 1767225600); /* the job's own start on this version */
    assert_int_equal(j->submit, 1767225400);
    assert_true(j->gpu_util_sum == 360); /* requested = TRESUsageIn, not consumed */
    assert_true(fabs(j->gpu_mem_mib - 36266.0) < 1);
    j = find(&l, "4299_7");
    assert_int_equal(j->id_raw, 4300);
    assert_string_equal(j->state, "RUNNING");
    assert_int_equal(j->end, -1);
    assert_string_equal(j->qos, "high");
    j = find(&l, "4310+1");
    assert_int_equal(j->gpus, 2);
    assert_string_equal(j->partition, "");
    slurm_jobs_free(&l);
    free(buf);
}

/* slurmrestd /slurm/v0.0.41/jobs: the controller's key names, GPU
 * indexes per node, a running job's end_time is its time limit. */
static void test_restd(void **state)
{
    size_t len;
    char *buf = slurp("slurmrestd-v0.0.41-jobs.json", &len), err[256] = "";
    struct slurm_jobs l;
    const struct slurm_job *j;

    (void)state;
    assert_status(slurm_parse_json(buf, len, &l, err, sizeof err), GI_OK);
    assert_int_equal(l.n, 2);
    j = find(&l, "5100");
    assert_string_equal(j->user, "alice");
    assert_string_equal(j->state, "RUNNING");
    assert_int_equal(j->start, 1767225600);
    assert_int_equal(j->end, -1);
    assert_int_equal(j->gpus, 6);
    assert_int_equal(j->nnodes, 2);
    assert_int_equal(j->nodes[0].nidx, 4);
    assert_int_equal(j->nodes[1].nidx, 2);
    assert_int_equal(j->nodes[1].idx[0], 1);
    assert_int_equal(j->nodes[1].idx[1], 3);
    j = find(&l, "5101");
    assert_string_equal(j->state, "COMPLETED");
    assert_int_equal(j->end, 1767229200);
    assert_int_equal(j->gpus, 2);
    assert_string_equal(j->gpu_type, "t4");
    assert_int_equal(j->nodes[0].nidx, -1); /* CNT only: no indexes */
    slurm_jobs_free(&l);
    free(buf);

    buf = slurp("slurmrestd-error.json", &len);
    assert_status(slurm_parse_json(buf, len, &l, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "Authentication failure"));
    free(buf);
}

static void test_malformed(void **state)
{
    struct slurm_jobs l;
    char err[256];
    static const char *const bad[] = {"", "{", "[]", "{\"jobs\":{}}", "null", "{\"jobs\":1}"};

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        assert_status(slurm_parse_json(bad[i], strlen(bad[i]), &l, err, sizeof err), GI_INVALID);
        assert_true(err[0] != '\0');
        assert_int_equal(l.n, 0);
    }
    /* Jobs of the wrong shape are skipped one by one. */
    {
        const char *s = "{\"jobs\":[1,\"x\",{\"job_id\":\"7\"},{\"job_id\":{\"set\":false}},"
                        "{\"job_id\":9,\"nodes\":\"n[1-\",\"time\":{\"start\":\"x\"},"
                        "\"state\":{\"current\":[5]},\"tres\":{\"allocated\":[{\"type\":\"gres\","
                        "\"name\":\"gpu\",\"count\":-1}]}}]}";
        assert_status(slurm_parse_json(s, strlen(s), &l, err, sizeof err), GI_OK);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.skipped, 4);
        assert_int_equal(l.items[0].nnodes, 0); /* the bad node list alone is dropped */
        assert_string_equal(l.items[0].nodelist, "n[1-");
        assert_int_equal(l.items[0].start, -1);
        assert_int_equal(l.items[0].gpus, -1);
        assert_string_equal(l.items[0].state, "");
        slurm_jobs_free(&l);
    }
    /* A NULL error buffer is allowed. */
    assert_status(slurm_parse_json("x", 1, &l, NULL, 0), GI_INVALID);
    assert_status(slurm_parse_parsable("x", 1, '|', &l, NULL, 0), GI_OK);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.skipped, 1);
    slurm_jobs_free(&l);
    slurm_jobs_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist),    cmocka_unit_test(test_tres),
        cmocka_unit_test(test_times),       cmocka_unit_test(test_gpu_idx),
        cmocka_unit_test(test_parsable_us), cmocka_unit_test(test_parsable_header),
        cmocka_unit_test(test_json_v37),    cmocka_unit_test(test_json_v41),
        cmocka_unit_test(test_restd),       cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
