/* The SQL that judges a GPU record (alias `g`, with `:stale` bound to the
 * freshness limit): when its newest reading was taken, whether that is
 * stale, and its state. The GPU list, the drift report and the discovered
 * figures of servers and data centers all use these, so they agree on
 * what is fresh and what is busy. Only src/store/ includes this. */
#ifndef GI_STORE_GPU_SQL_H
#define GI_STORE_GPU_SQL_H

/* When a GPU's newest reading was taken (not when it arrived); rows older
 * than migration 008 fall back to their sample or report time. */
#define GPU_OBSERVED "COALESCE(g.observed_at, g.sample_at, g.last_seen_at)"
#define GPU_IS_STALE "(" GPU_OBSERVED " < :stale)"
/* A GPU's state, derived when read: missing (its owning source's host
 * report stopped listing it), stale (its newest reading was taken before
 * the freshness limit), unknown (no utilization measured), idle (measured
 * under STORE_BUSY_PCT, 5%) or in_use. */
#define GPU_STATE                                                                                  \
    "CASE WHEN g.missing_since IS NOT NULL THEN 'missing' WHEN " GPU_IS_STALE " THEN 'stale' "     \
    "WHEN g.util_pct IS NULL THEN 'unknown' WHEN g.util_pct < 5 THEN 'idle' ELSE 'in_use' END"
/* Busy: present, freshly read and at or above STORE_BUSY_PCT. */
#define GPU_IS_BUSY "(" GPU_STATE " = 'in_use')"

#endif
