/* Runs a fuzz target's entry point over files, so a seed corpus (and any
 * input a fuzzer once crashed on) stays a regression test under the
 * ordinary compiler and its sanitizers. Arguments are files or
 * directories (one level deep); exits non-zero when none was read. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest input replayed; seeds are small, this only guards typos. */
#define REPLAY_MAX (64u << 20)

/* Reads a whole file into an exactly sized buffer (so overreads are
 * caught) and feeds it to the target; returns 0 or -1. */
static int replay_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    int rc = -1;

    if (fp == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || (unsigned long)n > REPLAY_MAX ||
        fseek(fp, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot size %s\n", path);
        goto cleanup;
    }
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        goto cleanup;
    }
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    rc = 0;
cleanup:
    free(buf);
    fclose(fp);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file in dir, in name order; returns the count or -1. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int count = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (nn == NULL)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat sb;
        if (names[i] == NULL) {
            count = -1; /* out of memory */
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (replay_file(path) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    int total = 0;

    for (int i = 1; i < argc; i++) {
        struct stat sb;
        int n;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            return 1;
        }
        n = S_ISDIR(sb.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]) == 0 ? 1 : -1;
        if (n < 0)
            return 1;
        total += n;
    }
    printf("replayed %d input(s)\n", total);
    return total > 0 ? 0 : 1;
}
