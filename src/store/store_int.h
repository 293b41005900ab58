/* Private to src/store/: what several noun files share beyond db.h, that
 * is the SQL fragments more than one of them builds statements from and
 * the few helpers one noun offers another inside a transaction. Each noun
 * file keeps its own statements in an X-macro table STATEMENTS(X) of
 * X(NAME, sql) entries, expanded with STORE_AS_ENUM and STORE_AS_SQL.
 * All SQL is static text written in the subset PostgreSQL also accepts;
 * values are always bound. */
#ifndef GI_STORE_INT_H
#define GI_STORE_INT_H

#include "store/db.h"
#include "store/store.h"

#include <stdint.h>

#define STORE_AS_ENUM(id, sql) ST_##id,
#define STORE_AS_SQL(id, sql) sql,

#define PAGE "LIMIT :limit OFFSET :offset"

/* Statements two noun files run, defined once so both share one cached
 * statement: a data center's id by name (datacenters.c) and the source
 * list (sources.c). */
extern const char store_sql_dc_by_name[];
extern const char store_sql_source_list[];

/* Finds or creates the source `name` of `kind` on c (inside the caller's
 * transaction, if any): GI_CONFLICT when the name belongs to a source of
 * another kind. */
int source_ensure(struct conn *c, const char *name, const char *kind, const char *team,
                  const char *env, const char *cluster, int64_t *id);

#endif
