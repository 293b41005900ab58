/* The push API: a host's GPUs, samples and processes in one JSON batch.
 * A pusher token writes only as the source it was created for, and only
 * for hosts inside its scope (host-name patterns, a cluster); editors and
 * admins name the source in the batch. Idempotent per (source, batch_id).
 * A batch is refused (400/413) only when its structure is wrong; fields
 * and records that cannot be accepted are dropped and listed in the
 * reply's "warnings" (and counted on the source). */
#include "api/api.h"
#include "core/observation.h"
#include "core/status.h"
#include "parse/ingest.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reply's warning list: at most INGEST_MAX_WARNINGS entries. */
static json_t *warnings_json(const struct ingest_warnings *w)
{
    json_t *a = json_array();
    size_t n = w->n < INGEST_MAX_WARNINGS ? w->n : INGEST_MAX_WARNINGS;

    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            a, json_pack("{s:s, s:s}", "field", w->items[i].field, "message", w->items[i].message));
    return a;
}

/* A token confined to host-name patterns or to a cluster reports only for
 * hosts inside them; 403 naming the host otherwise. A batch that names no
 * cluster is judged by the cluster the host already has. */
static bool scope_allows_or_reply(struct req *r, const struct gi_batch *b)
{
    const struct gi_principal *w = &r->who;
    const char *host = b->host.hostname, *cluster = b->host.cluster;
    char known[GI_LABEL_LEN];
    int st;

    if (w->hosts[0] && !gi_host_patterns_match(w->hosts, host)) {
        reply_error(r, 403, "forbidden", "host.hostname",
                    "this push token may not report host '%s' (it may report %s)", host, w->hosts);
        return false;
    }
    if (w->cluster[0] == '\0')
        return true;
    if (cluster[0] == '\0') {
        st = store_host_cluster(r->store, host, known, sizeof known);
        if (st != GI_OK && st != GI_NOT_FOUND) {
            reply_status(r, st, "host");
            return false;
        }
        cluster = known;
    }
    if (cluster[0] && strcmp(cluster, w->cluster) != 0) {
        reply_error(r, 403, "forbidden", "host.cluster",
                    "this push token may not report host '%s': it is in cluster '%s', the token "
                    "only in '%s'",
                    host, cluster, w->cluster);
        return false;
    }
    return true;
}

void api_ingest(struct req *r)
{
    json_t *body = NULL;
    struct gi_batch b = {0};
    struct ingest_error err;
    struct ingest_warnings *warn = NULL;
    struct store_ingest_result res;
    int64_t source_id = r->who.source_id;
    int st;

    if (r->who.role == GI_ROLE_PUSHER && source_id == 0) {
        reply_error(r, 403, "forbidden", NULL, "this push token is not bound to a source");
        return;
    }
    if (!req_json_body_or_reply(r, &body))
        return;
    if ((warn = malloc(sizeof *warn)) == NULL) {
        reply_status(r, GI_INTERNAL, "batch");
        goto cleanup;
    }
    if (ingest_parse(body, gi_now(), &b, &err, warn) != 0) {
        reply_error(r, err.too_large ? 413 : 400, err.too_large ? "too_large" : "validation_failed",
                    err.field, "%s", err.message);
        goto cleanup;
    }
    if (!scope_allows_or_reply(r, &b))
        goto cleanup;
    if (source_id != 0 && b.source[0]) {
        reply_error(r, 400, "validation_failed", "source",
                    "source is fixed by the push token and must not be given");
        goto cleanup;
    }
    if (source_id == 0) {
        if (b.source[0] == '\0') {
            reply_error(r, 400, "validation_failed", "source",
                        "source is required when pushing with a non-pusher token");
            goto cleanup;
        }
        /* A pull or csv source speaks only through its own path: a push
         * under its name would overwrite its GPUs and clear its error. */
        st = store_source_ensure(r->store, b.source, "push", NULL, NULL, NULL, &source_id);
        if (st == GI_CONFLICT) {
            reply_error(r, 403, "forbidden", "source",
                        "source '%s' is not a push source; push under a name of your own",
                        b.source);
            goto cleanup;
        }
        if (st != GI_OK) {
            reply_status(r, st, "source");
            goto cleanup;
        }
    }
    /* The store counts the warnings on the source, in the same write. */
    b.set.nwarnings = warn->n;
    if (warn->n > 0)
        snprintf(b.set.warning, sizeof b.set.warning, "%s", warn->items[0].message);
    if ((st = store_ingest(r->store, source_id, &b, &res)) != GI_OK) {
        reply_status(r, st, "batch");
        goto cleanup;
    }
    reply_json(r, res.duplicate ? 200 : 201,
               json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:o, s:I}", "batch_id", b.batch_id,
                         "duplicate", res.duplicate, "gpus", (json_int_t)res.gpus, "samples",
                         (json_int_t)res.samples, "processes", (json_int_t)res.processes, "events",
                         (json_int_t)res.events, "warnings", warnings_json(warn), "warnings_total",
                         (json_int_t)warn->n));
cleanup:
    free(warn);
    gi_batch_free(&b);
    json_decref(body);
}
