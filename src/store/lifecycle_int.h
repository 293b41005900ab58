/* Private interface between the halves of the lifecycle rules:
 * lifecycle_rules.c (storage, the pass over the assets, the actions) and
 * lifecycle_lang.c (the condition language: its check and its evaluation
 * on one asset). Nothing outside these files includes it. */
#ifndef GI_LIFECYCLE_INT_H
#define GI_LIFECYCLE_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest window a condition may name, in days. */
#define RULE_MAX_WINDOW 90

/* The health metrics a condition compares, in gpu_health_daily's terms. */
enum metric {
    M_XID_DAYS,
    M_XID_EVENTS,
    M_ECC_U,
    M_ECC_C,
    M_TEMP_P95,
    M_TEMP_MAX,
    M_UTIL,
    M_REMAP,
    M__COUNT
};

/* One day of an asset's health rollup; and an asset as a rule sees it:
 * its attributes and its health days, oldest first. */
struct hrow {
    int64_t day;
    double v[M__COUNT]; /* NAN: no reading */
};

struct actx {
    int64_t id, dc_id, gpu_id, warranty_left;
    bool has_warranty;
    char tag[128], kind[32], stage[32], model[128], serial[128], dc[128], uuid[128];
    struct hrow *rows;
    size_t nrows;
};

/* The longest window of condition c, in days. */
int lrule_max_window(const json_t *c);

/* Whether condition c (checked by store_lrule_check) holds for asset a on
 * day `today`; the leaves that matched are appended to why. */
bool lrule_eval(const json_t *c, const struct actx *a, int64_t today, json_t *why);

#endif
