/* Inventory resource kinds and their attributes, as data. Validation of API
 * bodies and CSV rows, the dashboard's forms (GET /api/v1/kinds) and the
 * demo fleet all read this one table: adding a kind or an attribute is an
 * edit here. Pure: no I/O. */
#ifndef GI_KINDS_H
#define GI_KINDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gi_ftype { GI_F_STRING, GI_F_INT, GI_F_NUMBER, GI_F_ENUM, GI_F_BOOL };

struct gi_field {
    const char *name;
    enum gi_ftype type;
    double min, max;            /* numbers */
    size_t maxlen;              /* strings */
    const char *const *choices; /* GI_F_ENUM, NULL-terminated */
    const char *label;          /* shown in the dashboard */
};

struct gi_kind {
    const char *name;   /* "server" */
    const char *counts; /* key in overview counts: "servers" */
    const char *label;  /* "Servers" */
    const struct gi_field *fields;
};

/* Every kind, ending with a zeroed entry. */
extern const struct gi_kind gi_kinds[];
const struct gi_kind *gi_kind_find(const char *name);

/* A validation failure: the field it concerns and why. */
struct gi_verr {
    char field[64];
    char message[256];
};

/* A resource body after validation. Strings and objects point into `in`
 * (borrowed) except attrs, which the caller owns and decrefs. */
struct gi_resource_in {
    int64_t datacenter_id;
    const char *kind;
    const char *name;
    const char *state;
    const char *tenant;
    const char *project;
    const char *gpu_model;
    int64_t gpu_count;
    json_t *attrs;
    const json_t *metadata;
};

/* Validates a whole resource object (create, or a merged patch). With
 * from_text, string values are converted to the field's type (CSV). On
 * GI_INVALID, *err says which field and why; unknown fields are refused. */
int gi_resource_check(const json_t *in, bool from_text, struct gi_resource_in *out,
                      struct gi_verr *err);

/* The kinds table as JSON for the dashboard. Caller owns the result. */
json_t *gi_kinds_json(void);

#endif
