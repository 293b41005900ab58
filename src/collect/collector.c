/* Chooses the GPU collector for this host; see collector.h. */
#include "collect/collector.h"

#include <stdio.h>
#include <string.h>

/* Each candidate's open function: 0 on success, -1 with err filled. */
typedef int (*collector_open_fn)(const struct collector_opts *o, struct collector *out, char *err,
                                 size_t errlen);

int collector_open_nvml(const struct collector_opts *o, struct collector *out, char *err,
                        size_t errlen);
int collector_open_nvsmi(const struct collector_opts *o, struct collector *out, char *err,
                         size_t errlen);
int collector_open_amd(const struct collector_opts *o, struct collector *out, char *err,
                       size_t errlen);
int collector_open_gaudi(const struct collector_opts *o, struct collector *out, char *err,
                         size_t errlen);

/* In order of preference: the library first, the tools as fallbacks. */
static const struct {
    const char *name;
    collector_open_fn open;
} candidates[] = {
    {"nvml", collector_open_nvml},
    {"nvidia-smi", collector_open_nvsmi},
    {"amd", collector_open_amd},
    {"gaudi", collector_open_gaudi},
    {NULL, NULL},
};

int collector_open(const struct collector_opts *o, struct collector *out, char *err, size_t errlen)
{
    size_t used = 0;

    memset(out, 0, sizeof *out);
    err[0] = '\0';
    for (size_t i = 0; candidates[i].name; i++) {
        char why[256];
        if (o->only && strcmp(o->only, candidates[i].name) != 0)
            continue;
        if (candidates[i].open(o, out, why, sizeof why) == 0)
            return 0;
        used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0, "%s%s: %s",
                                 used ? "; " : "", candidates[i].name, why);
        if (used >= errlen)
            used = errlen - 1;
    }
    if (err[0] == '\0')
        snprintf(err, errlen, "no GPU collector is available%s%s", o->only ? " named " : "",
                 o->only ? o->only : "");
    return -1;
}

void collector_close(struct collector *c)
{
    if (c && c->close)
        c->close(c->state);
    if (c)
        memset(c, 0, sizeof *c);
}
