/* Parses a sacct --parsable2 listing (unit separator between fields) the
 * way the slurm source does, without storing it: the parse-alone figure
 * beside a whole pull in bench/slurm.sh. Prints {"jobs","nodes","seconds","cpu_s"}.
 * Usage: slurm_parse FILE */
#include "core/status.h"
#include "parse/slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    struct slurm_jobs l;
    struct timespec a, b, ca, cb;
    char err[SLURM_ERR_LEN] = "", *buf;
    size_t nodes = 0;
    long n;
    FILE *f;

    if (argc != 2 || !(f = fopen(argv[1], "rb")))
        return 2;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n)
        return 2;
    fclose(f);
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    if (slurm_parse_parsable(buf, (size_t)n, '\x1f', &l, err, sizeof err) != GI_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    for (size_t i = 0; i < l.n; i++)
        nodes += l.items[i].nnodes;
    printf("{\"jobs\":%zu,\"nodes\":%zu,\"seconds\":%.3f,\"cpu_s\":%.3f}\n", l.n, nodes,
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
           (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) / 1e9);
    slurm_jobs_free(&l);
    free(buf);
    return 0;
}
