/* Names for the program-wide status codes. */
#include "core/status.h"

const char *gi_status_name(int st)
{
    switch (st) {
    case GI_OK:
        return "ok";
    case GI_NOT_FOUND:
        return "not_found";
    case GI_CONFLICT:
        return "conflict";
    case GI_INVALID:
        return "invalid";
    case GI_TOO_LARGE:
        return "too_large";
    case GI_UNAVAILABLE:
        return "unavailable";
    case GI_NO_SPACE:
        return "no_space";
    case GI_RETRY:
        return "retry";
    case GI_INTERNAL:
        return "internal";
    }
    return "unknown";
}
