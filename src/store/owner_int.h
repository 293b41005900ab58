/* Private to the ownership files of src/store/ (ownership.c, owner_assign.c,
 * owner_dims.c, owner_rules.c): what they share inside a transaction. */
#ifndef GI_OWNER_INT_H
#define GI_OWNER_INT_H

#include "store/store_int.h"

#include <jansson.h>
#include <stdint.h>

/* The dimension kind an owner field's value must name: team -> team,
 * env -> environment, pool -> pool, cluster and cloud -> cluster (a cloud
 * is a cluster dimension's name or its attrs.cloud). */
const char *owner_field_kind(const char *field);
/* GI_OK when `value` names a dimension of the kind field `field` takes,
 * GI_INVALID when none does (a typo), another status on failure. */
int owner_dim_check(struct conn *c, const char *field, const char *value);
/* Validates a rule (kind, key, value, set values naming dimensions);
 * GI_INVALID with err naming the field. */
int owner_rule_check(struct conn *c, const struct store_rule *r, struct store_owner_err *err);
/* Records an ownership change so that cached rule lists are reloaded. */
int owner_bump(struct conn *c);
/* Tells this process's resolver caches that ownership changed; every
 * ownership write calls it after its transaction ends. */
void owner_touch(void);
/* Formats integer member `key` of o (unix seconds) as RFC 3339, in place;
 * null stays null. */
void owner_time_member(json_t *o, const char *key);
/* Recomputes GPU gpu_id's materialized owner as of `now` (a GPU that is
 * gone is GI_OK). */
int owner_refresh_at(struct conn *c, int64_t gpu_id, int64_t now);
/* Every GPU's id (caller frees). */
int owner_gpu_ids(struct conn *c, int64_t **ids, size_t *n);
/* The GPUs an assignment of target t/tid affects: a GPU and its MIG
 * instances, a host's GPUs, the GPUs of the hosts linked to a resource
 * (caller frees). */
int owner_affected_gpus(struct conn *c, enum store_owner_target t, int64_t tid, int64_t **ids,
                        size_t *n);

#endif
