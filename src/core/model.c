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

/* Case-insensitive glob match of one pattern (its first plen bytes): `*`
 * any run of characters, `?` any one. Iterative, so no input recurses. */
static bool glob_match(const char *p, size_t plen, const char *s)
{
    size_t i = 0, star = (size_t)-1;
    const char *resume = NULL;

    while (*s) {
        char pc = i < plen ? p[i] : '\0';
        char a = (char)((pc >= 'A' && pc <= 'Z') ? pc + 32 : pc);
        char b = (char)((*s >= 'A' && *s <= 'Z') ? *s + 32 : *s);
        if (i < plen && pc == '*') {
            star = i++;
            resume = s;
        } else if (i < plen && (pc == '?' || a == b)) {
            i++;
            s++;
        } else if (star != (size_t)-1) {
            i = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (i < plen && p[i] == '*')
        i++;
    return i == plen;
}

bool gi_host_patterns_valid(const char *list)
{
    size_t n = 0;

    if (list == NULL || *list == '\0' || strlen(list) >= sizeof((struct gi_principal *)0)->hosts)
        return false;
    for (const char *p = list;; p++) {
        if (*p == ',' || *p == '\0') {
            if (n == 0 || n > 253)
                return false;
            if (*p == '\0')
                return true;
            n = 0;
            continue;
        }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '_' || *p == '*' || *p == '?'))
            return false;
        n++;
    }
}

bool gi_host_patterns_match(const char *list, const char *host)
{
    const char *p = list;

    while (p && *p) {
        size_t len = strcspn(p, ",");
        if (len > 0 && glob_match(p, len, host))
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}
