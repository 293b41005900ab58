/* Where a thing is: the data center of a GPU, host, ticket or room audit,
 * read alone, for the read confinement of tokens confined to data centers
 * (api/scope.c). A GPU is where its host is; a host where its linked
 * inventory server is (hosts.datacenter_id follows it); a ticket where its
 * asset is, else where its GPU is. Also the binding of a list's scope
 * (store_int.h, STORE_SCOPE_IN). */
#include "core/status.h"
#include "store/store_int.h"

#include <stdio.h>

#define STATEMENTS(X)                                                                              \
    X(GPU, "SELECT COALESCE(h.datacenter_id, 0) FROM gpus g LEFT JOIN hosts h ON h.id = "          \
           "g.host_id WHERE g.uuid = :key")                                                        \
    X(HOST, "SELECT COALESCE(datacenter_id, 0) FROM hosts WHERE id = :id")                         \
    X(HOST_NAME, "SELECT COALESCE(datacenter_id, 0) FROM hosts WHERE hostname = :key ORDER BY id " \
                 "LIMIT 1")                                                                        \
    X(TICKET, "SELECT " STORE_TICKET_DC("t") " FROM tickets t WHERE t.id = :id")                   \
    X(ROOM_AUDIT, "SELECT COALESCE(datacenter_id, 0) FROM asset_audits WHERE id = :id")            \
    X(SOURCE, "SELECT " STORE_SOURCE_DC("s") " FROM sources s WHERE s.id = :id")                   \
    X(SYNC_CONFLICT, "SELECT COALESCE(a.datacenter_id, 0) FROM sync_conflicts c JOIN assets a ON " \
                     "a.id = c.asset_id WHERE c.id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

int store_thing_dc(struct store *st, enum store_thing kind, const char *key, int64_t id,
                   int64_t *dc_id)
{
    static const enum stmt_id by_kind[] = {[STORE_THING_GPU] = ST_GPU,
                                           [STORE_THING_HOST] = ST_HOST,
                                           [STORE_THING_HOST_NAME] = ST_HOST_NAME,
                                           [STORE_THING_TICKET] = ST_TICKET,
                                           [STORE_THING_ROOM_AUDIT] = ST_ROOM_AUDIT,
                                           [STORE_THING_SOURCE] = ST_SOURCE,
                                           [STORE_THING_SYNC_CONFLICT] = ST_SYNC_CONFLICT};
    struct conn *c;
    struct db_stmt *s;
    int rc = GI_INTERNAL;

    *dc_id = 0;
    if ((unsigned)kind >= sizeof by_kind / sizeof *by_kind)
        return GI_INVALID;
    c = db_conn_get(st);
    if (!(s = db_prep(c, stmt_sql[by_kind[kind]])))
        goto cleanup;
    if (kind == STORE_THING_GPU || kind == STORE_THING_HOST_NAME)
        db_bind_text(s, ":key", key ? key : "");
    else
        db_bind_int(s, ":id", id);
    rc = db_fetch_int(c, s, dc_id);
cleanup:
    db_conn_put(st, c);
    return rc;
}

void db_bind_scope(struct db_stmt *s, const struct store_scope *sc)
{
    static const char *const names[] = {":sc0",  ":sc1",  ":sc2",  ":sc3", ":sc4",  ":sc5",
                                        ":sc6",  ":sc7",  ":sc8",  ":sc9", ":sc10", ":sc11",
                                        ":sc12", ":sc13", ":sc14", ":sc15"};
    int n = sc ? sc->n : 0;

    _Static_assert(sizeof names / sizeof *names == GI_TOKEN_DCS_MAX, "one name per scope slot");
    if (n < 0 || n > GI_TOKEN_DCS_MAX)
        n = 0;
    db_bind_int(s, ":sc_n", n);
    for (int i = 0; i < GI_TOKEN_DCS_MAX; i++)
        db_bind_int(s, names[i], i < n ? sc->dcs[i] : -1);
}
