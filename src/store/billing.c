/* Cloud billing lines: storing an export's GPU lines, matching each to the
 * host whose instance it billed, spreading its cost over that host's
 * GPUs, and the lines that matched nothing. See store.h.
 *
 * A host is found by a line's instance when one of the line's keys (its
 * resource id, its resource name, the id's last path segment; lower case,
 * since Azure paths compare ignoring case) equals one of the host's:
 * hostname, the hostname up to its first dot, machine id, serial, the
 * instance id of the cloud instance the host is (cloud.c), or the
 * providerID of the Kubernetes node on the host (whole, without its
 * scheme, and its last segment: aws:///us-east-1a/i-0abc gives i-0abc).
 * A key two hosts share finds neither. Failing that, a line with a team
 * tag is the team's cost; else it is unmatched. */
#include "store/store_int.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/billing.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define UNMATCHED_LISTED 1000

#define LINE_COLS                                                                                  \
    "id, provider, account, source_line, resource_id, resource_name, instance_type, "              \
    "usage_start, usage_end, cost_micros, credits_micros, currency, tags, team, host_id, "         \
    "gpu_ids, matched_by, imported_at "

#define STATEMENTS(X)                                                                              \
    X(HOST_KEYS, "SELECT id, hostname, machine_id, serial FROM hosts UNION ALL SELECT host_id, "   \
                 "instance_id, NULL, NULL FROM cloud_instances WHERE host_id IS NOT NULL")         \
    X(NODE_KEYS, "SELECT h.id, n.provider_id FROM k8s_nodes n JOIN hosts h ON h.hostname = "       \
                 "COALESCE(n.hostname, n.name) WHERE n.provider_id IS NOT NULL")                   \
    X(HOST_GPUS, "SELECT id FROM gpus WHERE host_id = :host AND parent_uuid IS NULL AND id NOT "   \
                 "IN (SELECT gpu_id FROM cloud_gpus WHERE superseded_at IS NOT NULL) ORDER BY "    \
                 "idx, id")                                                                        \
    X(LINE_SEEN, "SELECT id, matched_by FROM billing_lines WHERE provider = :provider AND "        \
                 "account = :account AND line_key = :key")                                         \
    X(LINE_REMATCH, "UPDATE billing_lines SET team = :team, host_id = :host, gpu_ids = :gpus, "    \
                    "matched_by = :matched WHERE id = :id AND matched_by IS NULL")                 \
    X(LINE_ADD,                                                                                    \
      "INSERT INTO billing_lines (provider, account, line_key, source_line, resource_id, "         \
      "resource_name, instance_type, usage_start, usage_end, cost_micros, credits_micros, "        \
      "currency, tags, team, host_id, gpu_ids, matched_by, imported_at) VALUES (:provider, "       \
      ":account, :key, :line, :resource, :rname, :itype, :start, :end, :cost, :credits, "          \
      ":currency, :tags, :team, :host, :gpus, :matched, :now) RETURNING id")                       \
    X(COST_ADD, "INSERT INTO billing_costs (line_id, gpu_id, usage_start, cost_micros) VALUES "    \
                "(:line, :gpu, :start, :cost)")                                                    \
    X(UNMATCHED_COUNT, "SELECT COUNT(*) FROM billing_lines WHERE matched_by IS NULL")              \
    X(UNMATCHED_LIST, "SELECT " LINE_COLS "FROM billing_lines WHERE matched_by IS NULL ORDER BY "  \
                      "usage_start, id " PAGE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- host keys ---- */

/* Adds key → host to the map (lower case); a key two hosts share maps to
 * 0, which finds neither. */
static void key_add(json_t *map, const char *key, int64_t host)
{
    char low[512];
    size_t n = 0;
    json_t *had;

    if (!key || !*key)
        return;
    for (; key[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)key[n]);
    low[n] = '\0';
    had = json_object_get(map, low);
    if (had && json_integer_value(had) != host)
        json_object_set_new(map, low, json_integer(0));
    else if (!had)
        json_object_set_new(map, low, json_integer(host));
}

static const char *last_segment(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

/* A providerID's keys: without its scheme ("azure:///subscriptions/..."
 * gives "/subscriptions/..."; "aws:///us-east-1a/i-0abc" gives
 * "us-east-1a/i-0abc"), and its last segment. */
static void provider_keys(json_t *map, const char *pid, int64_t host)
{
    const char *p = strstr(pid, "://");

    p = p ? p + 3 : pid;
    if (strncmp(pid, "azure://", 8) == 0) {
        key_add(map, p, host);
    } else {
        while (*p == '/')
            p++;
        key_add(map, p, host);
    }
    key_add(map, last_segment(p), host);
}

static int load_keys(struct conn *c, json_t *map)
{
    struct db_stmt *s = prep(c, ST_HOST_KEYS);
    int step;

    if (!s)
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        const char *hn = db_col_text(s, 1);
        key_add(map, hn, id);
        if (hn && strchr(hn, '.')) {
            char shortname[256];
            gi_strlcpy(shortname, hn, sizeof shortname);
            *strchr(shortname, '.') = '\0';
            key_add(map, shortname, id);
        }
        key_add(map, db_col_text(s, 2), id);
        key_add(map, db_col_text(s, 3), id);
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    if (!(s = prep(c, ST_NODE_KEYS)))
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW)
        provider_keys(map, db_col_text(s, 1), db_col_int(s, 0));
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* The host a line billed, and the key that found it (into key). */
static int64_t find_host(json_t *map, const struct billing_line *l, char *key, size_t len)
{
    const char *cands[] = {l->resource_id, l->resource_name, last_segment(l->resource_id)};

    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
        char low[512];
        size_t n = 0;
        int64_t h;
        if (!cands[i] || !*cands[i])
            continue;
        for (; cands[i][n] && n + 1 < sizeof low; n++)
            low[n] = (char)tolower((unsigned char)cands[i][n]);
        low[n] = '\0';
        if ((h = json_integer_value(json_object_get(map, low))) > 0) {
            gi_strlcpy(key, cands[i], len);
            return h;
        }
    }
    return 0;
}

/* The physical GPUs of a host, cached per host in `cache`. */
static int host_gpus(struct conn *c, json_t *cache, int64_t host, json_t **ids)
{
    char k[32];
    struct db_stmt *s;
    json_t *arr;
    int step;

    snprintf(k, sizeof k, "%lld", (long long)host);
    if ((*ids = json_object_get(cache, k)) != NULL)
        return GI_OK;
    if (!(s = prep(c, ST_HOST_GPUS)))
        return GI_INTERNAL;
    arr = json_array();
    db_bind_int(s, ":host", host);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(arr, json_integer(db_col_int(s, 0)));
    db_reset(s);
    json_object_set_new(cache, k, arr);
    *ids = arr;
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* ---- import ---- */

static json_t *time_text(int64_t t)
{
    char buf[32];
    gi_time_format(t, buf, sizeof buf);
    return json_string(buf);
}

static json_t *money_text(int64_t micros)
{
    char buf[32];
    gi_money_format(micros, 2, buf, sizeof buf);
    return json_string(buf);
}

/* Spreads a line's cost over its GPUs: equal shares, the division's
 * remainder on the first. */
static int spread(struct conn *c, int64_t line_id, const struct billing_line *l, json_t *gpus)
{
    size_t n = json_array_size(gpus);
    int64_t share = n ? l->cost_micros / (int64_t)n : 0;
    int64_t rest = l->cost_micros - share * (int64_t)n;

    for (size_t i = 0; i < n; i++) {
        struct db_stmt *s = prep(c, ST_COST_ADD);
        int rc;
        if (!s)
            return GI_INTERNAL;
        db_bind_int(s, ":line", line_id);
        db_bind_int(s, ":gpu", json_integer_value(json_array_get(gpus, i)));
        db_bind_int(s, ":start", l->start);
        db_bind_int(s, ":cost", share + (i == 0 ? rest : 0));
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

struct tally {
    int64_t added, duplicates, rematched, by_instance, by_tag, unmatched;
    json_t *unmatched_lines;
};

/* What a line matches: *host and *gpus (borrowed from the cache; NULL
 * unless an instance matched), matched ("" when nothing did) and the team
 * (the line's tag, else the owner of the instance's GPUs when it ran). */
struct match {
    int64_t host;
    json_t *gpus;
    char matched[600];
    char team[OWNER_LEN];
};

static int match_line(struct conn *c, json_t *keys, json_t *gpu_cache, const struct billing_line *l,
                      struct match *m)
{
    char key[512] = "";
    struct owner_fields own;
    int rc;

    memset(m, 0, sizeof *m);
    gi_strlcpy(m->team, l->team, sizeof m->team);
    m->host = find_host(keys, l, key, sizeof key);
    if (m->host > 0 && (rc = host_gpus(c, gpu_cache, m->host, &m->gpus)) != GI_OK)
        return rc;
    if (m->host > 0 && json_array_size(m->gpus) > 0) {
        snprintf(m->matched, sizeof m->matched, "instance:%s", key);
        if (!m->team[0] && owner_resolve(c, json_integer_value(json_array_get(m->gpus, 0)),
                                         l->start, &own) == GI_OK)
            gi_strlcpy(m->team, own.team, sizeof m->team);
        return GI_OK;
    }
    m->gpus = NULL;
    if (m->team[0])
        snprintf(m->matched, sizeof m->matched, "tag:team");
    return GI_OK;
}

static void bind_match(struct db_stmt *s, const struct match *m)
{
    db_bind_opt_text(s, ":team", m->team);
    db_bind_opt_int(s, ":host", m->gpus ? m->host : -1);
    if (m->gpus)
        db_bind_json(s, ":gpus", m->gpus);
    else
        db_bind_text(s, ":gpus", "[]");
    db_bind_opt_text(s, ":matched", m->matched);
}

/* A stored line that matched nothing when it was imported is matched
 * again when its export is imported again: its host may have appeared. */
static int rematch(struct conn *c, int64_t id, const struct billing_line *l, const struct match *m,
                   struct tally *t)
{
    struct db_stmt *s;
    int rc;

    if (!m->matched[0]) {
        t->duplicates++;
        return GI_OK;
    }
    if (!(s = prep(c, ST_LINE_REMATCH)))
        return GI_INTERNAL;
    bind_match(s, m);
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    t->rematched++;
    return m->gpus ? spread(c, id, l, m->gpus) : GI_OK;
}

/* Stores one line unless it is stored already. */
static int import_line(struct conn *c, json_t *keys, json_t *gpu_cache,
                       const struct billing_line *l, struct tally *t)
{
    struct db_stmt *s = prep(c, ST_LINE_SEEN);
    struct match m;
    int64_t id = 0;
    bool seen = false, unmatched = false;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":provider", l->provider);
    db_bind_text(s, ":account", l->account);
    db_bind_text(s, ":key", l->line_key);
    if ((step = db_step(c, s)) == DB_ROW) {
        seen = true;
        id = db_col_int(s, 0);
        unmatched = db_col_is_null(s, 1);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (seen && !unmatched) {
        t->duplicates++;
        return GI_OK;
    }
    if ((rc = match_line(c, keys, gpu_cache, l, &m)) != GI_OK)
        return rc;
    if (seen)
        return rematch(c, id, l, &m, t);
    if (m.gpus)
        t->by_instance++;
    else if (m.matched[0])
        t->by_tag++;
    else
        t->unmatched++;
    if (!(s = prep(c, ST_LINE_ADD)))
        return GI_INTERNAL;
    db_bind_text(s, ":provider", l->provider);
    db_bind_text(s, ":account", l->account);
    db_bind_text(s, ":key", l->line_key);
    db_bind_int(s, ":line", (int64_t)l->line);
    db_bind_opt_text(s, ":resource", l->resource_id);
    db_bind_opt_text(s, ":rname", l->resource_name);
    db_bind_opt_text(s, ":itype", l->instance_type);
    db_bind_int(s, ":start", l->start);
    db_bind_int(s, ":end", l->end);
    db_bind_int(s, ":cost", l->cost_micros);
    db_bind_int(s, ":credits", l->credits_micros);
    db_bind_text(s, ":currency", l->currency);
    db_bind_json(s, ":tags", l->tags);
    bind_match(s, &m);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK)
        return rc;
    t->added++;
    if (!m.matched[0] && json_array_size(t->unmatched_lines) < UNMATCHED_LISTED)
        json_array_append_new(
            t->unmatched_lines,
            json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:o, s:o, s:o, s:s, s:s}", "line",
                      (json_int_t)l->line, "provider", l->provider, "account", l->account,
                      "resource_id", l->resource_id[0] ? l->resource_id : NULL, "instance_type",
                      l->instance_type[0] ? l->instance_type : NULL, "usage_start",
                      time_text(l->start), "usage_end", time_text(l->end), "cost",
                      money_text(l->cost_micros), "currency", l->currency, "reason",
                      m.host > 0          ? "the instance's host reports no GPUs, and no team tag"
                      : l->resource_id[0] ? "no host has this instance id, and no team tag"
                                          : "no resource id and no team tag"));
    return m.gpus ? spread(c, id, l, m.gpus) : GI_OK;
}

int store_billing_import(struct store *st, const char *actor, const struct billing_file *f,
                         bool dry_run, json_t **report)
{
    struct conn *c = db_conn_get(st);
    json_t *keys = json_object(), *gpu_cache = json_object();
    struct tally t = {.unmatched_lines = json_array()};
    int rc = db_tx_begin(c);

    *report = NULL;
    if (rc == GI_OK)
        rc = load_keys(c, keys);
    for (size_t i = 0; rc == GI_OK && i < f->n; i++)
        rc = import_line(c, keys, gpu_cache, &f->lines[i], &t);
    if (rc == GI_OK) {
        *report = json_pack(
            "{s:s, s:s?, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:b}", "provider",
            f->format == BILLING_AWS   ? "aws"
            : f->format == BILLING_GCP ? "gcp"
                                       : "azure",
            "variant", f->variant, "rows", (json_int_t)f->rows, "lines", (json_int_t)f->n,
            "skipped", (json_int_t)f->skipped, "added", (json_int_t)t.added, "duplicates",
            (json_int_t)t.duplicates, "rematched", (json_int_t)t.rematched, "matched_instance",
            (json_int_t)t.by_instance, "matched_tag", (json_int_t)t.by_tag, "unmatched",
            (json_int_t)t.unmatched, "unmatched_lines", t.unmatched_lines, "dry_run", dry_run);
        if (!dry_run && t.added + t.rematched > 0) {
            json_t *summary = json_pack(
                "{s:O, s:O, s:I, s:I, s:I, s:I, s:I}", "provider",
                json_object_get(*report, "provider"), "variant",
                json_object_get(*report, "variant"), "added", (json_int_t)t.added, "rematched",
                (json_int_t)t.rematched, "matched_instance", (json_int_t)t.by_instance,
                "matched_tag", (json_int_t)t.by_tag, "unmatched", (json_int_t)t.unmatched);
            rc = db_audit(c, actor, "import", "billing", 0, NULL, summary);
            json_decref(summary);
        }
    }
    /* A rehearsal runs every statement, then undoes it. */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end_doc(c, rc, report);
    db_conn_put(st, c);
    json_decref(keys);
    json_decref(gpu_cache);
    json_decref(t.unmatched_lines);
    return rc;
}

/* The current row of a LINE_COLS statement as its document. */
static json_t *line_doc(struct db_stmt *s)
{
    json_t *o = db_row_json(s);

    json_object_set_new(o, "usage_start", time_text(db_col_int(s, 7)));
    json_object_set_new(o, "usage_end", time_text(db_col_int(s, 8)));
    json_object_set_new(o, "cost", money_text(db_col_int(s, 9)));
    json_object_set_new(o, "credits", money_text(db_col_int(s, 10)));
    json_object_del(o, "cost_micros");
    json_object_del(o, "credits_micros");
    json_object_set_new(o, "line", json_integer(db_col_int(s, 3)));
    json_object_del(o, "source_line");
    for (int i = 12; i <= 15; i += 3) {
        json_t *j =
            json_loads(db_col_text(s, i) ? db_col_text(s, i) : "null", JSON_DECODE_ANY, NULL);
        json_object_set_new(o, i == 12 ? "tags" : "gpu_ids", j ? j : json_null());
    }
    return o;
}

int store_billing_unmatched(struct store *st, const struct store_page *pg, json_t **items,
                            int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *arr = json_array();
    int rc = GI_INTERNAL, step;

    *items = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_UNMATCHED_COUNT)) || (rc = db_fetch_int(c, s, total)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_UNMATCHED_LIST)))
        goto cleanup;
    db_bind_page(s, pg);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(arr, line_doc(s));
    db_reset(s);
    rc = step == DB_DONE ? GI_OK : db_status(step);
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    if (rc == GI_OK)
        *items = arr;
    else
        json_decref(arr);
    return rc;
}
