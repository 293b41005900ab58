/* The audit log: reading the rows db_audit() appends inside every
 * writing transaction. */
#include "store/store_int.h"
#include "core/status.h"

/* An entry is where the thing it names is now: a data center, a resource,
 * a host, a GPU (its host), a ticket or a sync conflict (its asset); an
 * entry about anything else, or a thing since deleted, is in none. */
#define AUDIT_DC                                                                                   \
    "CASE audit.entity WHEN 'datacenter' THEN audit.entity_id WHEN 'resource' THEN (SELECT "       \
    "r.datacenter_id FROM resources r WHERE r.id = audit.entity_id) WHEN 'host' THEN (SELECT "     \
    "h.datacenter_id FROM hosts h WHERE h.id = audit.entity_id) WHEN 'gpu' THEN (SELECT "          \
    "h.datacenter_id FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE g.id = audit.entity_id) "  \
    "WHEN 'ticket' THEN (SELECT " STORE_TICKET_DC(                                                 \
        "t") " FROM tickets t WHERE t.id = "                                                       \
             "audit.entity_id) WHEN 'sync_conflict' THEN (SELECT a.datacenter_id FROM "            \
             "sync_conflicts c "                                                                   \
             "JOIN assets a ON a.id = c.asset_id WHERE c.id = audit.entity_id) END"
#define AUDIT_WHERE                                                                                \
    "WHERE (:entity IS NULL OR entity = :entity) AND (:eid = 0 OR entity_id = :eid) AND (:actor "  \
    "IS NULL OR actor = :actor) AND " STORE_SCOPE_IN(AUDIT_DC) " "

#define STATEMENTS(X)                                                                              \
    X(AUDIT_LIST,                                                                                  \
      "SELECT id, at AS occurred_at, actor, action, entity, entity_id, before_json AS before, "    \
      "after_json AS after FROM audit " AUDIT_WHERE "ORDER BY id DESC " PAGE)                      \
    X(AUDIT_COUNT, "SELECT COUNT(*) FROM audit " AUDIT_WHERE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static int list_page(struct store *st, enum stmt_id count, enum stmt_id list, db_filter_binder bind,
                     const void *filter, const struct store_page *pg, json_t **items,
                     int64_t *total)
{
    return db_list_page(st, stmt_sql[count], stmt_sql[list], bind, filter, pg, items, total);
}

static void bind_audit_filter(struct db_stmt *s, const void *filter)
{
    const struct store_audit_filter *f = filter;
    db_bind_text(s, ":entity", f->entity);
    db_bind_int(s, ":eid", f->entity_id);
    db_bind_text(s, ":actor", f->actor);
    db_bind_scope(s, &f->scope);
}

int store_audit_list(struct store *st, const struct store_audit_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    return list_page(st, ST_AUDIT_COUNT, ST_AUDIT_LIST, bind_audit_filter, f, pg, items, total);
}
