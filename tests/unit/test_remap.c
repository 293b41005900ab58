/* Memory row remapping, from the report to the lifecycle rule, on each
 * store: nvidia-smi's <remapped_rows> read (Yes/No, N/A on older GPUs),
 * the push batch's fields, the GPU's stored state and its remap_failure
 * event, the daily health rollup counting failure days from the day the
 * failure was first reported, the health score's reason, and the example
 * rule "Uncorrectable ECC or a row-remap failure" matching in a dry run. */
#include "unit.h"
#include "testdb.h"

#include "collect/batchjson.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/dcgm.h"
#include "parse/ingest.h"
#include "parse/nvsmi.h"
#include "store/store.h"

#include <string.h>

#define DAY 86400

static const char xml[] =
    "<?xml version=\"1.0\" ?>\n<nvidia_smi_log><driver_version>550.54.15</driver_version>"
    "<gpu id=\"00000000:07:00.0\"><product_name>NVIDIA A100-SXM4-80GB</product_name>"
    "<uuid>GPU-remap-0</uuid><remapped_rows><remapped_row_corr>3</remapped_row_corr>"
    "<remapped_row_unc>1</remapped_row_unc><remapped_row_pending>No</remapped_row_pending>"
    "<remapped_row_failure>Yes</remapped_row_failure></remapped_rows></gpu>"
    "<gpu id=\"00000000:08:00.0\"><product_name>Tesla V100-SXM2-32GB</product_name>"
    "<uuid>GPU-remap-1</uuid><remapped_rows>N/A</remapped_rows></gpu>"
    "<gpu id=\"00000000:09:00.0\"><product_name>NVIDIA A100-SXM4-80GB</product_name>"
    "<uuid>GPU-remap-2</uuid><remapped_rows><remapped_row_corr>0</remapped_row_corr>"
    "<remapped_row_unc>0</remapped_row_unc><remapped_row_pending>Maybe</remapped_row_pending>"
    "<remapped_row_failure>No</remapped_row_failure></remapped_rows></gpu></nvidia_smi_log>\n";

static void xml_remapped_rows(void **state)
{
    struct gi_obs_set s = {0};
    char err[NVSMI_ERR_LEN];

    (void)state;
    assert_int_equal(nvsmi_parse_xml(xml, sizeof xml - 1, &s, err, sizeof err), GI_OK);
    assert_int_equal(s.ngpus, 3);
    assert_int_equal(s.gpus[0].remap_corrected, 3);
    assert_int_equal(s.gpus[0].remap_uncorrectable, 1);
    assert_int_equal(s.gpus[0].remap_pending, 0);
    assert_int_equal(s.gpus[0].remap_failure, 1);
    assert_int_equal(s.gpus[1].remap_corrected, -1); /* N/A: a V100 has none */
    assert_int_equal(s.gpus[1].remap_failure, -1);
    assert_int_equal(s.gpus[2].remap_failure, 0);
    assert_int_equal(s.gpus[2].remap_pending, -1); /* "Maybe": absent, a warning */
    assert_int_equal(s.nwarnings, 1);
    gi_obs_free(&s);
}

/* dcgm-exporter's remap metrics: counts and the failure flag (0/1 only). */
static void dcgm_remap(void **state)
{
    static const char page[] =
        "DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu=\"0\",UUID=\"GPU-d0\",Hostname=\"n1\"} 1\n"
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu=\"0\",UUID=\"GPU-d0\",Hostname=\"n1\"} 4\n"
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{gpu=\"0\",UUID=\"GPU-d0\",Hostname=\"n1\"} 2\n"
        "DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu=\"1\",UUID=\"GPU-d1\",Hostname=\"n1\"} 7\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-d2\",Hostname=\"n1\"} 5\n";
    struct gi_obs_set s = {0};
    struct prom_error pe = {0};
    struct dcgm d;

    (void)state;
    dcgm_begin(&d, &s);
    assert_int_equal(prom_parse_text(page, sizeof page - 1, dcgm_sample, &d, &pe), GI_OK);
    assert_int_equal(dcgm_finish(&d), GI_OK);
    dcgm_free(&d);
    assert_int_equal(s.ngpus, 3);
    assert_int_equal(s.gpus[0].remap_failure, 1);
    assert_int_equal(s.gpus[0].remap_uncorrectable, 4);
    assert_int_equal(s.gpus[0].remap_corrected, 2);
    assert_int_equal(s.gpus[1].remap_failure, -1); /* 7 is no flag */
    assert_int_equal(s.gpus[2].remap_failure, -1); /* not exported */
    assert_int_equal(s.gpus[2].remap_corrected, -1);
    gi_obs_free(&s);
}

/* The agent's batch carries the fields and the push API reads them back. */
static void batch_round_trip(void **state)
{
    struct gi_batch b, back;
    struct ingest_error e = {0};
    static struct ingest_warnings w;
    char err[NVSMI_ERR_LEN];
    json_t *j;

    (void)state;
    memset(&b, 0, sizeof b);
    gi_strlcpy(b.batch_id, "rt", sizeof b.batch_id);
    gi_strlcpy(b.host.hostname, "dgx-remap", sizeof b.host.hostname);
    assert_int_equal(nvsmi_parse_xml(xml, sizeof xml - 1, &b.set, err, sizeof err), GI_OK);
    j = batchjson_build(&b);
    assert_non_null(j);
    assert_true(json_is_true(
        json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "remap_failure")));
    assert_null(json_object_get(json_array_get(json_object_get(j, "gpus"), 1), "remap_failure"));
    memset(&back, 0, sizeof back);
    assert_int_equal(ingest_parse(j, gi_now(), &back, &e, &w), 0);
    json_decref(j);
    assert_int_equal(back.set.ngpus, 3);
    assert_int_equal(back.set.gpus[0].remap_failure, 1);
    assert_int_equal(back.set.gpus[0].remap_uncorrectable, 1);
    assert_int_equal(back.set.gpus[0].remap_pending, 0);
    assert_int_equal(back.set.gpus[1].remap_failure, -1);
    assert_int_equal(back.set.gpus[2].remap_failure, 0);
    gi_batch_free(&back);
    gi_batch_free(&b);
}

static void push(struct testdb_fixture *f, int64_t src, const char *id, int failure)
{
    struct gi_batch b;
    struct store_ingest_result res;
    struct gi_gpu_obs *g;

    memset(&b, 0, sizeof b);
    gi_strlcpy(b.batch_id, id, sizeof b.batch_id);
    gi_strlcpy(b.host.hostname, "dgx-remap", sizeof b.host.hostname);
    g = gi_obs_add_gpu(&b.set);
    gi_strlcpy(g->uuid, "GPU-remap-0", sizeof g->uuid);
    gi_strlcpy(g->serial, "RS0", sizeof g->serial);
    gi_strlcpy(g->name, "NVIDIA A100-SXM4-80GB", sizeof g->name);
    g->vendor = GI_VENDOR_NVIDIA;
    g->remap_corrected = 3;
    g->remap_uncorrectable = 1;
    g->remap_pending = 0;
    g->remap_failure = failure;
    assert_status(store_ingest(f->st, src, &b, &res), GI_OK);
    gi_batch_free(&b);
}

static void store_health_rule(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err aerr = {0};
    struct store_health_run run;
    int64_t now = gi_now(), today = now - now % DAY, src = 0, gid, asset = 0, rule = 0;
    json_t *in, *out = NULL, *health = NULL, *items = NULL, *rep = NULL, *v;
    char sql[512];
    size_t i;

    assert_status(store_source_ensure(f->st, "agents", "push", NULL, NULL, NULL, &src), GI_OK);
    push(f, src, "r1", 0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpus WHERE uuid = 'GPU-remap-0' "
                                           "AND remap_failure = 0 AND remap_corrected = 3 AND "
                                           "remap_uncorrectable = 1 AND remap_pending = 0 AND "
                                           "remap_failure_since IS NULL"),
                     1);
    push(f, src, "r2", 1);
    push(f, src, "r3", 1); /* still failed: no second event */
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_events WHERE kind = "
                                           "'remap_failure' AND gpu_uuid = 'GPU-remap-0'"),
                     1);
    assert_int_equal(
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpus WHERE remap_failure_since IS NOT NULL"),
        1);
    gid = testdb_scalar(&f->db, "SELECT id FROM gpus WHERE uuid = 'GPU-remap-0'");

    /* Two days to roll up: yesterday (before the failure was first
     * reported: not a failure day) and today. */
    snprintf(sql, sizeof sql,
             "UPDATE gpus SET remap_failure_since = %lld WHERE id = %lld;"
             "INSERT INTO gpu_samples (ts, gpu_id, temp_c) VALUES (%lld, %lld, 50), (%lld, %lld, "
             "51);"
             "INSERT INTO usage_daily (gpu_id, day, owned_s, allocated_s, busy_s, alloc_idle_s, "
             "idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, updated_at) VALUES "
             "(%lld, %lld, 86400, 0, 0, 0, 0, 0, 0, 0, 0, 0, %lld), (%lld, %lld, 86400, 0, 0, 0, "
             "0, 0, 0, 0, 0, 0, %lld)",
             (long long)(today + 60), (long long)gid, (long long)(today - DAY + 100),
             (long long)gid, (long long)(today + 100), (long long)gid, (long long)gid,
             (long long)(today - DAY), (long long)(now - 3600), (long long)gid, (long long)today,
             (long long)(now - 3600));
    if (f->db.name[0] != '\0')
        assert_int_equal(testdb_psql(f->db.locator, sql, NULL, 0), 0);
    else {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(f->db.locator, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    assert_status(store_health_rollup(f->st, now, 0, &run), GI_OK);
    assert_int_equal(run.days, 2);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM gpu_health_daily WHERE gpu_id = %lld AND ((day = %lld AND "
             "remap_failures = 0) OR (day = %lld AND remap_failures = 1))",
             (long long)gid, (long long)(today - DAY), (long long)today);
    assert_int_equal(testdb_scalar(&f->db, sql), 2);

    /* The GPU's asset: its health lists the failure. */
    in = json_pack("{s:s, s:s, s:s, s:s}", "tag", "RM1", "kind", "gpu", "serial", "RS0", "model",
                   "A100");
    assert_status(store_asset_create(f->st, "t", in, &out, &aerr), GI_OK);
    assert_string_equal(json_string_value(json_object_get(out, "gpu_uuid")), "GPU-remap-0");
    json_decref(out);
    json_decref(in);
    assert_status(store_asset_id(f->st, "RM1", &asset), GI_OK);
    assert_status(store_asset_health(f->st, asset, now, &health), GI_OK);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(health, "reasons"), 0), "reason")),
                        "remap_failure");
    assert_int_equal(json_integer_value(json_object_get(health, "score")), 50);
    assert_int_equal(json_array_size(json_object_get(health, "absent")), 0);
    json_decref(health);

    /* The example rule matches it in a dry run. */
    {
        bool seeded;
        assert_status(store_lrules_seed(f->st, &seeded), GI_OK);
    }
    assert_status(store_lrule_list(f->st, &items), GI_OK);
    json_array_foreach(items, i, v) {
        if (strstr(json_string_value(json_object_get(v, "name")), "row-remap"))
            rule = json_integer_value(json_object_get(v, "id"));
    }
    json_decref(items);
    assert_true(rule > 0);
    assert_status(store_lrule_evaluate(f->st, rule, NULL, true, "lifecycle:rules", now, &rep),
                  GI_OK);
    assert_int_equal(json_integer_value(json_object_get(rep, "matched")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(rep, "matches"), 0), "asset")),
                        "RM1");
    json_decref(rep);

    /* Repaired: no failure any more, the start is forgotten. */
    push(f, src, "r4", 0);
    assert_int_equal(
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpus WHERE remap_failure_since IS NULL AND "
                              "remap_failure = 0"),
        1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xml_remapped_rows),
        cmocka_unit_test(batch_round_trip),
        cmocka_unit_test(dcgm_remap),
        cmocka_unit_test_setup_teardown(store_health_rule, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
