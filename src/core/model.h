/* The shared vocabulary of records: roles, principals, resource states. */
#ifndef GI_MODEL_H
#define GI_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* Who may do what. viewer < editor < admin form a ladder; pusher stands
 * apart and may only push observations as its own source. */
enum gi_role {
    GI_ROLE_NONE = 0,
    GI_ROLE_PUSHER,
    GI_ROLE_VIEWER,
    GI_ROLE_EDITOR,
    GI_ROLE_ADMIN,
};

const char *gi_role_name(enum gi_role r);
/* Parses "admin", "editor", "viewer", "pusher"; GI_OK or GI_INVALID. */
int gi_role_parse(const char *s, enum gi_role *out);
/* True when a caller holding `have` may call something that needs `need`. */
bool gi_role_allows(enum gi_role have, enum gi_role need);

/* The authenticated caller of one request. */
/* The most data centers one token may be confined to. */
#define GI_TOKEN_DCS_MAX 16

struct gi_principal {
    enum gi_role role;
    int64_t token_id;  /* tokens.id, or 0 for a dashboard session */
    int64_t source_id; /* pusher tokens: the one source they may write as */
    char name[128];    /* token or user name; recorded as the audit actor */
    /* Pusher tokens' scope: host-name globs, comma-separated ("" any host),
     * and the one cluster its hosts must be in ("" any). */
    char hosts[512];
    char cluster[128];
    /* The data centers the identity may change assets and resources in
     * (ids; n_dcs 0: every data center). */
    int64_t dcs[GI_TOKEN_DCS_MAX];
    int n_dcs;
};

/* Host-name patterns of a pusher token's scope: comma-separated globs
 * (`*` any run, `?` one character; letters, digits, `.`, `-`, `_`), each
 * 1..253 bytes, the whole list under 512. */
bool gi_host_patterns_valid(const char *list);
/* True when `host` matches one of the patterns, ignoring case. */
bool gi_host_patterns_match(const char *list, const char *host);

/* Allocation states of an inventory resource. */
#define GI_STATES "available, in_use, reserved, maintenance, retired"
bool gi_state_valid(const char *s);

#endif
