/* An asset's data center, read alone, for the write checks of tokens
 * confined to data centers. */
#include "core/status.h"
#include "store/assets_int.h"

#define STATEMENTS(X) X(DC, "SELECT COALESCE(datacenter_id, 0) FROM assets WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

int store_asset_dc(struct store *st, const char *tag, const char *epc, int64_t *dc_id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t id = 0;
    int rc;

    *dc_id = 0;
    db_read_begin(c);
    if ((rc = asset_find(c, tag, epc, &id)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, stmt_sql[ST_DC])))
        goto cleanup;
    db_bind_int(s, ":id", id);
    rc = db_fetch_int(c, s, dc_id);
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}
