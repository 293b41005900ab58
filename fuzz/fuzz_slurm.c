/* libFuzzer target for the Slurm accounting parsers. The first byte picks
 * the entry point (sacct --parsable2 with '|' or the unit separator,
 * sacct/slurmrestd JSON, a host list, a TRES string, a time); the rest is
 * the input. Checks invariants the parsers promise on every result. */
#include "core/status.h"
#include "parse/slurm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Aborts when a string field is not terminated within its buffer. */
#define CHECK_STR(f)                                                                               \
    do {                                                                                           \
        if (memchr((f), '\0', sizeof(f)) == NULL)                                                  \
            abort();                                                                               \
    } while (0)

static void check_jobs(const struct slurm_jobs *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct slurm_job *j = &l->items[i];
        CHECK_STR(j->id);
        CHECK_STR(j->cluster);
        CHECK_STR(j->user);
        CHECK_STR(j->account);
        CHECK_STR(j->name);
        CHECK_STR(j->state);
        CHECK_STR(j->nodelist);
        CHECK_STR(j->gpu_type);
        if (j->id_raw <= 0 || j->id[0] == '\0' || strchr(j->id, '['))
            abort();
        if (j->gpus < -1 || j->start < -1 || j->end < -1 || j->submit < -1 || j->elapsed < -1)
            abort();
        if (j->nnodes > SLURM_MAX_NODES || (j->nnodes > 0 && j->nodes == NULL))
            abort();
        if (!isnan(j->gpu_util_sum) && j->gpu_util_sum < 0)
            abort();
        for (size_t k = 0; k < j->nnodes; k++) {
            CHECK_STR(j->nodes[k].name);
            if (j->nodes[k].name[0] == '\0' || j->nodes[k].nidx < -1 ||
                j->nodes[k].nidx > SLURM_MAX_IDX || j->nodes[k].nidx == 0)
                abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct slurm_jobs l;
    char err[SLURM_ERR_LEN], *s;
    int st;

    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0:
    case 1:
        st = slurm_parse_parsable((const char *)data + 1, size - 1, data[0] % 5 ? '\x1f' : '|', &l,
                                  err, sizeof err);
        if (st != GI_OK && l.n != 0)
            abort();
        check_jobs(&l);
        slurm_jobs_free(&l);
        return 0;
    case 2:
        err[0] = '\0';
        st = slurm_parse_json((const char *)data + 1, size - 1, &l, err, sizeof err);
        if (st != GI_OK && (l.n != 0 || err[0] == '\0'))
            abort();
        check_jobs(&l);
        slurm_jobs_free(&l);
        return 0;
    default:
        break;
    }
    /* The string entry points take NUL-terminated text. */
    if (!(s = malloc(size)))
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] % 5 == 3) {
        struct slurm_node *v = NULL;
        size_t n = 0;
        st = slurm_hostlist_expand(s, 64, &v, &n);
        if ((st != GI_OK && (v || n)) || n > 64)
            abort();
        for (size_t i = 0; i < n; i++)
            CHECK_STR(v[i].name);
        free(v);
    } else {
        int64_t g;
        char type[64];
        double u, m;
        slurm_tres_gpus(s, &g, type, sizeof type);
        slurm_tres_usage(s, &u, &m);
        CHECK_STR(type);
        if (g < -1 || slurm_time(s) < -1)
            abort();
    }
    free(s);
    return 0;
}
