/* The audit log: reading the rows db_audit() appends inside every
 * writing transaction. */
#include "store/store_int.h"
#include "core/status.h"

#define STATEMENTS(X)                                                                              \
    X(AUDIT_LIST,                                                                                  \
      "SELECT id, at AS occurred_at, actor, action, entity, entity_id, before_json AS before, "    \
      "after_json AS after FROM audit WHERE (:entity IS NULL OR entity = :entity) "                \
      "AND (:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor) "                 \
      "ORDER BY id DESC " PAGE)                                                                    \
    X(AUDIT_COUNT, "SELECT COUNT(*) FROM audit WHERE (:entity IS NULL OR entity = :entity) AND "   \
                   "(:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor)")

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
}

int store_audit_list(struct store *st, const struct store_audit_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    return list_page(st, ST_AUDIT_COUNT, ST_AUDIT_LIST, bind_audit_filter, f, pg, items, total);
}
