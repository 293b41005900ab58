/* The agent's bounded on-disk queue; see spool.h. */
#define _GNU_SOURCE
#include "collect/spool.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEQ_DIGITS 16

/* True for a batch file name: exactly 16 digits then ".json". */
static int parse_name(const char *name, uint64_t *seq)
{
    char digits[SEQ_DIGITS + 1];
    int64_t v;

    if (strlen(name) != SEQ_DIGITS + 5 || strcmp(name + SEQ_DIGITS, ".json") != 0)
        return 0;
    memcpy(digits, name, SEQ_DIGITS);
    digits[SEQ_DIGITS] = '\0';
    if (gi_parse_int64(digits, 0, INT64_MAX, &v) != GI_OK)
        return 0;
    *seq = (uint64_t)v;
    return 1;
}

/* Lists batch files: oldest seq, newest seq, count and total bytes. */
static int scan(struct spool *sp, uint64_t *oldest, uint64_t *newest, size_t *count,
                uint64_t *bytes)
{
    DIR *d = opendir(sp->dir);
    struct dirent *e;

    *oldest = UINT64_MAX;
    *newest = 0;
    *count = 0;
    *bytes = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        uint64_t seq;
        struct stat st;
        if (!parse_name(e->d_name, &seq))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0)
            continue;
        (*count)++;
        *bytes += (uint64_t)st.st_size;
        if (seq < *oldest)
            *oldest = seq;
        if (seq > *newest)
            *newest = seq;
    }
    closedir(d);
    return 0;
}

static void path_of(const struct spool *sp, uint64_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%016" PRIu64 ".json", sp->dir, seq);
}

/* Persists the dropped counter (best effort: it is a statistic). */
static void save_dropped(struct spool *sp)
{
    char p[600], tmp[610];
    FILE *f;

    snprintf(p, sizeof p, "%s/dropped", sp->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    if ((f = fopen(tmp, "w")) == NULL)
        return;
    fprintf(f, "%" PRIu64 "\n", sp->dropped);
    if (fclose(f) == 0)
        rename(tmp, p);
}

int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes)
{
    uint64_t oldest, newest, bytes;
    size_t count;
    char p[600], line[32];
    FILE *f;

    memset(sp, 0, sizeof *sp);
    if (!gi_strlcpy(sp->dir, dir, sizeof sp->dir)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    sp->max_bytes = max_bytes;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (scan(sp, &oldest, &newest, &count, &bytes) != 0)
        return -1;
    sp->next_seq = count ? newest + 1 : 1;
    snprintf(p, sizeof p, "%s/dropped", dir);
    if ((f = fopen(p, "r")) != NULL) {
        int64_t v;
        if (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            if (gi_parse_int64(line, 0, INT64_MAX, &v) == GI_OK)
                sp->dropped = (uint64_t)v;
        }
        fclose(f);
    }
    return 0;
}

int spool_put(struct spool *sp, const char *data, size_t len)
{
    char p[600], tmp[620];
    int fd;
    ssize_t w;
    size_t off = 0;
    uint64_t oldest, newest, bytes;
    size_t count;

    if (len > sp->max_bytes) {
        errno = EFBIG;
        return -1;
    }
    /* Make room first: drop the oldest batches past the bound. */
    while (scan(sp, &oldest, &newest, &count, &bytes) == 0 && count > 0 &&
           bytes + len > sp->max_bytes) {
        path_of(sp, oldest, p, sizeof p);
        if (unlink(p) != 0)
            return -1;
        sp->dropped++;
        gi_warn("spool full: dropped batch %" PRIu64 " (%" PRIu64 " dropped in all)", oldest,
                sp->dropped);
        save_dropped(sp);
    }
    path_of(sp, sp->next_seq, p, sizeof p);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    while (off < len) {
        w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, p) != 0) {
        unlink(tmp);
        return -1;
    }
    sp->next_seq++;
    return 0;
}

int spool_peek(struct spool *sp, uint64_t *seq, char **data, size_t *len)
{
    uint64_t oldest, newest, bytes;
    size_t count;
    char p[600];
    FILE *f;
    struct stat st;
    char *buf;

    if (scan(sp, &oldest, &newest, &count, &bytes) != 0)
        return -1;
    if (count == 0)
        return 0;
    path_of(sp, oldest, p, sizeof p);
    if ((f = fopen(p, "rb")) == NULL)
        return -1;
    if (fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size > sp->max_bytes) {
        fclose(f);
        return -1;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[st.st_size] = '\0';
    *seq = oldest;
    *data = buf;
    *len = (size_t)st.st_size;
    return 1;
}

int spool_remove(struct spool *sp, uint64_t seq)
{
    char p[600];

    path_of(sp, seq, p, sizeof p);
    return unlink(p) == 0 || errno == ENOENT ? 0 : -1;
}

int spool_stat(struct spool *sp, size_t *count, uint64_t *bytes)
{
    uint64_t oldest, newest;
    return scan(sp, &oldest, &newest, count, bytes);
}

int spool_reject(struct spool *sp, uint64_t seq)
{
    char p[600], q[620];

    path_of(sp, seq, p, sizeof p);
    snprintf(q, sizeof q, "%s/%016" PRIu64 ".rejected", sp->dir, seq);
    return rename(p, q) == 0 ? 0 : -1;
}
