/* Bounded subprocess capture; see runcmd.h. */
#define _GNU_SOURCE
#include "collect/runcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int runcmd(const char *const argv[], size_t max, int timeout_s, char **out, size_t *len, char *err,
           size_t errlen)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, status = 0, rc = -1;
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    char *buf = NULL, ebuf[512] = "";
    size_t n = 0, cap = 0, en = 0;
    long long deadline = ms_now() + (long long)timeout_s * 1000;
    bool killed = false, too_big = false;

    *out = NULL;
    *len = 0;
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(errno));
        pid = -1;
        goto cleanup;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    for (int open_fds = 2; open_fds > 0;) {
        struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        long long left = deadline - ms_now();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = true;
            break;
        }
        if (poll(fds, 2, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            char tmp[8192];
            ssize_t r;
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = read(fds[i].fd, tmp, sizeof tmp);
            if (r <= 0) {
                if (i == 0)
                    po[0] = (close(po[0]), -1);
                else
                    pe[0] = (close(pe[0]), -1);
                open_fds--;
                continue;
            }
            if (i == 1) {
                size_t take = (size_t)r < sizeof ebuf - 1 - en ? (size_t)r : sizeof ebuf - 1 - en;
                memcpy(ebuf + en, tmp, take);
                en += take;
                ebuf[en] = '\0';
                continue;
            }
            if (n + (size_t)r > max) {
                too_big = true;
                kill(pid, SIGKILL);
                open_fds = 0;
                break;
            }
            if (n + (size_t)r + 1 > cap) {
                size_t nc = cap ? cap * 2 : 65536;
                char *nb;
                while (nc < n + (size_t)r + 1)
                    nc *= 2;
                if ((nb = realloc(buf, nc)) == NULL) {
                    kill(pid, SIGKILL);
                    open_fds = 0;
                    break;
                }
                buf = nb;
                cap = nc;
            }
            memcpy(buf + n, tmp, (size_t)r);
            n += (size_t)r;
            buf[n] = '\0';
        }
        if (po[0] < 0 && pe[0] < 0)
            break;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    ebuf[strcspn(ebuf, "\n")] = '\0';
    if (killed)
        snprintf(err, errlen, "%s ran longer than %d s and was stopped", argv[0], timeout_s);
    else if (too_big)
        snprintf(err, errlen, "%s printed more than %zu bytes", argv[0], max);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, errlen, "%s failed (status %d): %s", argv[0],
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, ebuf[0] ? ebuf : "no message");
    else {
        *out = buf ? buf : calloc(1, 1);
        *len = n;
        buf = NULL;
        rc = *out ? 0 : -1;
    }
cleanup:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    free(buf);
    return rc;
}
