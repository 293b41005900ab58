/* GET /metrics: Prometheus text for operators: GPU counts, stale and
 * missing GPUs, and per-source freshness and status. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends formatted text to a growing buffer; false when out of memory. */
static bool put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return false;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return true;
        }
        size_t nc = *cap ? *cap * 2 : 4096;
        while (nc < *len + (size_t)n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (nb == NULL)
            return false;
        *buf = nb;
        *cap = nc;
    }
}

/* Writes a label value with Prometheus escaping (\\, \", \n). */
static void label(char *out, size_t len, const char *v)
{
    size_t j = 0;
    for (const char *p = v ? v : ""; *p && j + 3 < len; p++) {
        if (*p == '\\' || *p == '"') {
            out[j++] = '\\';
            out[j++] = *p;
        } else if (*p == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else {
            out[j++] = *p;
        }
    }
    out[j] = '\0';
}

void api_metrics(struct req *r)
{
    int64_t now = gi_now(), fresh = server_freshness(r->srv);
    struct store_pool_stats pool;
    json_t *m = NULL, *g, *src;
    char *buf = NULL, name[256], kind[64];
    size_t len = 0, cap = 0, i;
    bool ok = true;
    int st;

    /* The server's metrics count the whole fleet and every source: a token
     * confined to data centers cannot be shown them narrowed. */
    if (!who_unconfined_or_reply(r, "/metrics"))
        return;
    if ((st = store_metrics(r->store, now - fresh, &m)) != GI_OK) {
        reply_status(r, st, "metrics");
        return;
    }
    g = json_object_get(m, "gpus");
    ok = put(&buf, &len, &cap,
             "# HELP gpuinv_gpus GPUs (and MIG instances) known to gpuinv.\n"
             "# TYPE gpuinv_gpus gauge\ngpuinv_gpus %lld\n"
             "# HELP gpuinv_gpus_stale GPUs whose newest reading was taken before the freshness "
             "limit.\n"
             "# TYPE gpuinv_gpus_stale gauge\ngpuinv_gpus_stale %lld\n"
             "# HELP gpuinv_gpus_missing GPUs their host stopped reporting.\n"
             "# TYPE gpuinv_gpus_missing gauge\ngpuinv_gpus_missing %lld\n"
             "# HELP gpuinv_gpus_unknown Fresh GPUs without a utilization reading.\n"
             "# TYPE gpuinv_gpus_unknown gauge\ngpuinv_gpus_unknown %lld\n"
             "# HELP gpuinv_freshness_limit_seconds Data older than this is flagged stale.\n"
             "# TYPE gpuinv_freshness_limit_seconds gauge\ngpuinv_freshness_limit_seconds %lld\n"
             "# HELP gpuinv_source_last_success_age_seconds Seconds since each source last "
             "succeeded (absent if never).\n"
             "# TYPE gpuinv_source_last_success_age_seconds gauge\n",
             (long long)json_integer_value(json_object_get(g, "total")),
             (long long)json_integer_value(json_object_get(g, "stale")),
             (long long)json_integer_value(json_object_get(g, "missing")),
             (long long)json_integer_value(json_object_get(g, "unknown")), (long long)fresh);
    json_array_foreach(json_object_get(m, "sources"), i, src) {
        const char *last = json_string_value(json_object_get(src, "last_success_at"));
        int64_t t;
        label(name, sizeof name, json_string_value(json_object_get(src, "name")));
        label(kind, sizeof kind, json_string_value(json_object_get(src, "kind")));
        if (ok && last && gi_time_parse(last, &t) == GI_OK)
            ok = put(&buf, &len, &cap,
                     "gpuinv_source_last_success_age_seconds{source=\"%s\",kind=\"%s\"} %lld\n",
                     name, kind, (long long)(now - t));
    }
    ok = ok && put(&buf, &len, &cap,
                   "# HELP gpuinv_source_up 1 if the source's last attempt succeeded and is "
                   "fresh.\n# TYPE gpuinv_source_up gauge\n");
    json_array_foreach(json_object_get(m, "sources"), i, src) {
        bool up = json_is_null(json_object_get(src, "last_error")) &&
                  json_integer_value(json_object_get(src, "stale")) == 0;
        label(name, sizeof name, json_string_value(json_object_get(src, "name")));
        label(kind, sizeof kind, json_string_value(json_object_get(src, "kind")));
        ok = ok && put(&buf, &len, &cap, "gpuinv_source_up{source=\"%s\",kind=\"%s\"} %d\n", name,
                       kind, up ? 1 : 0);
    }
    ok = ok && put(&buf, &len, &cap,
                   "# HELP gpuinv_source_gpus GPU records (MIG instances included) each source "
                   "owns.\n"
                   "# TYPE gpuinv_source_gpus gauge\n");
    json_array_foreach(json_object_get(m, "sources"), i, src) {
        label(name, sizeof name, json_string_value(json_object_get(src, "name")));
        label(kind, sizeof kind, json_string_value(json_object_get(src, "kind")));
        ok = ok &&
             put(&buf, &len, &cap, "gpuinv_source_gpus{source=\"%s\",kind=\"%s\"} %lld\n", name,
                 kind, (long long)json_integer_value(json_object_get(src, "gpus_reported")));
    }
    json_decref(m);
    store_pool_stats(r->store, &pool);
    ok = ok && put(&buf, &len, &cap,
                   "# HELP gpuinv_db_pool_connections Database connections in this process's "
                   "pool.\n"
                   "# TYPE gpuinv_db_pool_connections gauge\ngpuinv_db_pool_connections %d\n"
                   "# HELP gpuinv_db_pool_waits_total Borrows that found every pooled connection "
                   "lent and waited.\n"
                   "# TYPE gpuinv_db_pool_waits_total counter\ngpuinv_db_pool_waits_total %lld\n"
                   "# HELP gpuinv_db_pool_wait_seconds_total Time those borrows waited.\n"
                   "# TYPE gpuinv_db_pool_wait_seconds_total counter\n"
                   "gpuinv_db_pool_wait_seconds_total %.6f\n",
                   pool.connections, (long long)pool.waits, pool.wait_s);
    if (!ok) {
        free(buf);
        reply_error(r, 500, "internal", NULL, "out of memory rendering metrics");
        return;
    }
    reply_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", buf, len, true);
    free(buf);
}
