/* Parses DescribeInstances pages the way the aws source does, without
 * signing, storing or asking for instance types: the parse-alone figure
 * beside a whole pull in bench/cloud_pull.sh. Prints
 * {"pages","instances","seconds","cpu_s"}. Usage: aws_parse FILE... */
#include "core/status.h"
#include "parse/aws.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double secs(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
    struct aws_instances l = {0};
    struct timespec a, b, ca, cb;
    char err[AWS_ERR_LEN] = "";
    double wall = 0, cpu = 0;

    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        char *buf;
        long n;
        if (!f)
            return 2;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (n < 0 || !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n)
            return 2;
        fclose(f);
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
        if (aws_parse_instances(buf, (size_t)n, "us-east-1", &l, err, sizeof err) != GI_OK) {
            fprintf(stderr, "%s: %s\n", argv[i], err);
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
        wall += secs(&a, &b);
        cpu += secs(&ca, &cb);
        free(buf);
    }
    printf("{\"pages\":%d,\"instances\":%zu,\"seconds\":%.3f,\"cpu_s\":%.3f}\n", argc - 1, l.n,
           wall, cpu);
    aws_instances_free(&l);
    return 0;
}
