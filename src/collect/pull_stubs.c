/* Fetchers whose parsers are not wired yet: they report so plainly. */
#include "core/observation.h"

#include <jansson.h>
#include <stdio.h>

int pull_fetch_kubernetes(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);

static int not_yet(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "pulling from %s is not available in this build", what);
    return -1;
}

int pull_fetch_kubernetes(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen)
{
    (void)cfg;
    (void)set;
    return not_yet(err, errlen, "Kubernetes");
}
