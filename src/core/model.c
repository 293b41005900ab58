/* Roles and states: names, parsing and the permission ladder. */
#include "core/model.h"
#include "core/status.h"

#include <string.h>

static const char *const role_names[] = {"none", "pusher", "viewer", "editor", "admin"};

const char *gi_role_name(enum gi_role r)
{
    return (unsigned)r < sizeof role_names / sizeof *role_names ? role_names[r] : "none";
}

int gi_role_parse(const char *s, enum gi_role *out)
{
    for (unsigned i = 1; s && i < sizeof role_names / sizeof *role_names; i++) {
        if (strcmp(s, role_names[i]) == 0) {
            *out = (enum gi_role)i;
            return GI_OK;
        }
    }
    return GI_INVALID;
}

bool gi_role_allows(enum gi_role have, enum gi_role need)
{
    if (need == GI_ROLE_NONE)
        return true;
    if (have == GI_ROLE_NONE)
        return false;
    if (need == GI_ROLE_PUSHER)
        return have == GI_ROLE_PUSHER || have >= GI_ROLE_EDITOR;
    if (have == GI_ROLE_PUSHER)
        return false;
    return have >= need;
}

bool gi_state_valid(const char *s)
{
    static const char *const states[] = {"available", "in_use", "reserved", "maintenance",
                                         "retired"};
    for (unsigned i = 0; s && i < sizeof states / sizeof *states; i++)
        if (strcmp(s, states[i]) == 0)
            return true;
    return false;
}
