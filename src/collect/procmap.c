/* Process-to-owner mapping from the proc file system: see procmap.h. */
#define _GNU_SOURCE
#include "collect/procmap.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CGROUP_LINES 512
#define PW_BUF 16384

/* Reads at most PROCMAP_MAX_FILE - 1 bytes of path into a new
 * NUL-terminated buffer (caller frees). Returns GI_OK, GI_NOT_FOUND when
 * the file does not exist, GI_UNAVAILABLE when it cannot be read. */
static int read_small(const char *path, char **out)
{
    char *buf = NULL;
    size_t n = 0;
    int fd = -1, st = GI_OK;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st = errno == ENOENT || errno == ESRCH ? GI_NOT_FOUND : GI_UNAVAILABLE;
        goto cleanup;
    }
    buf = malloc(PROCMAP_MAX_FILE);
    if (buf == NULL) {
        st = GI_INTERNAL;
        goto cleanup;
    }
    while (n < PROCMAP_MAX_FILE - 1) {
        ssize_t r = read(fd, buf + n, PROCMAP_MAX_FILE - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            /* ESRCH: the process exited while we read. */
            st = errno == ESRCH ? GI_NOT_FOUND : GI_UNAVAILABLE;
            goto cleanup;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *out = buf;
    buf = NULL;

cleanup:
    if (fd >= 0)
        close(fd);
    free(buf);
    return st;
}

int procmap_parse_uid(const char *status, int64_t *uid)
{
    const char *p = status;

    while (p != NULL && *p) {
        if (strncmp(p, "Uid:", 4) == 0) {
            char num[16];
            size_t n = 0;
            p += 4;
            while (*p == ' ' || *p == '\t')
                p++;
            while (isdigit((unsigned char)*p) && n < sizeof num - 1)
                num[n++] = *p++;
            num[n] = '\0';
            if (isdigit((unsigned char)*p))
                return GI_NOT_FOUND; /* too long to be a uid */
            return gi_parse_int64(num, 0, INT64_C(4294967295), uid) == GI_OK ? GI_OK : GI_NOT_FOUND;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return GI_NOT_FOUND;
}

/* True when s[0..n) is all hex digits. */
static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Copies s[0..n) lower-cased into out (capacity len); false if it does
 * not fit. */
static int copy_lower(const char *s, size_t n, char *out, size_t len)
{
    if (n + 1 > len)
        return 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = '\0';
    return 1;
}

/* Takes a pod UID (8-4-4-4-12 hex with dashes or underscores) at s[0..n)
 * into out with dashes, lower-case. */
static int take_pod_uid(const char *s, size_t n, char *out, size_t len)
{
    char uid[PROCMAP_POD_UID_LEN];

    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int sep = i == 8 || i == 13 || i == 18 || i == 23;
        if (sep && s[i] != '-' && s[i] != '_')
            return 0;
        if (!sep && !isxdigit((unsigned char)s[i]))
            return 0;
        uid[i] = sep ? '-' : (char)tolower((unsigned char)s[i]);
    }
    uid[n] = '\0';
    return gi_strlcpy(out, uid, len);
}

/* Looks at one path component c[0..n) for a pod UID: "pod<uid>" (cgroupfs)
 * or "kubepods[-qos]-pod<uid>.slice" (systemd). */
static int component_pod(const char *c, size_t n, char *out, size_t len)
{
    if (n > 6 && strncmp(c + n - 6, ".slice", 6) == 0) {
        n -= 6;
        if (n < 12 || strncmp(c, "kubepods", 8) != 0)
            return 0;
        for (size_t i = n; i-- > 8;)
            if (strncmp(c + i, "-pod", 4) == 0)
                return take_pod_uid(c + i + 4, n - i - 4, out, len);
        return 0;
    }
    if (n > 3 && strncmp(c, "pod", 3) == 0)
        return take_pod_uid(c + 3, n - 3, out, len);
    return 0;
}

/* Looks at one path component c[0..n) for a container id: a runtime
 * scope ("docker-<id>.scope", "cri-containerd-<id>.scope",
 * "crio-<id>.scope", "libpod-<id>.scope") or a bare 64-hex-digit name
 * (cgroupfs drivers: /docker/<id>, /kubepods/…/pod<uid>/<id>). */
static int component_container(const char *c, size_t n, char *out, size_t len)
{
    static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-",
                                           "containerd-"};

    if (n > 6 && strncmp(c + n - 6, ".scope", 6) == 0) {
        n -= 6;
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
            size_t pl = strlen(prefixes[i]);
            /* "crio-conmon-<id>" and "libpod-conmon-<id>" are the monitor,
             * not the container; their id is not all hex, so they fail. */
            if (n > pl && strncmp(c, prefixes[i], pl) == 0 && n - pl >= 12 && n - pl <= 64 &&
                all_hex(c + pl, n - pl))
                return copy_lower(c + pl, n - pl, out, len);
        }
        return 0;
    }
    if (n == 64 && all_hex(c, n))
        return copy_lower(c, n, out, len);
    return 0;
}

int procmap_parse_cgroup(const char *cgroup, char *container, size_t clen, char *pod_uid,
                         size_t plen)
{
    const char *line = cgroup;
    char cid[PROCMAP_ID_LEN] = "", pod[PROCMAP_POD_UID_LEN] = "";

    if (clen > 0)
        container[0] = '\0';
    if (plen > 0)
        pod_uid[0] = '\0';
    for (int nl = 0; line != NULL && *line && nl < MAX_CGROUP_LINES; nl++) {
        const char *end = strchr(line, '\n');
        const char *stop = end ? end : line + strlen(line);
        /* hierarchy-ID:controllers:path; the path may hold more colons
         * ("…pod<uid>.slice:cri-containerd:<id>"), which split it too. */
        const char *p = memchr(line, ':', (size_t)(stop - line));
        if (p != NULL)
            p = memchr(p + 1, ':', (size_t)(stop - p - 1));
        char lcid[PROCMAP_ID_LEN] = "", lpod[PROCMAP_POD_UID_LEN] = "";
        while (p != NULL && p < stop) {
            const char *c = p + 1;
            const char *e = c;
            while (e < stop && *e != '/' && *e != ':')
                e++;
            size_t n = (size_t)(e - c);
            /* The innermost match wins (a container inside a container). */
            char tmp[PROCMAP_ID_LEN];
            if (component_container(c, n, tmp, sizeof tmp))
                gi_strlcpy(lcid, tmp, sizeof lcid);
            char ptmp[PROCMAP_POD_UID_LEN];
            if (component_pod(c, n, ptmp, sizeof ptmp))
                gi_strlcpy(lpod, ptmp, sizeof lpod);
            p = e < stop ? e : NULL;
        }
        if (cid[0] == '\0' && lcid[0] != '\0')
            gi_strlcpy(cid, lcid, sizeof cid);
        if (pod[0] == '\0' && lpod[0] != '\0')
            gi_strlcpy(pod, lpod, sizeof pod);
        line = end ? end + 1 : NULL;
    }
    /* An id that does not fit is dropped, never cut. */
    if (strlen(cid) < clen)
        gi_strlcpy(container, cid, clen);
    if (strlen(pod) < plen)
        gi_strlcpy(pod_uid, pod, plen);
    return (clen > 0 && container[0]) || (plen > 0 && pod_uid[0]) ? GI_OK : GI_NOT_FOUND;
}

void procmap_user_name(int64_t uid, char *out, size_t len)
{
    struct passwd pw, *res = NULL;
    char *buf = malloc(PW_BUF);

    if (buf != NULL && uid >= 0 && uid <= INT64_C(4294967295) &&
        getpwuid_r((uid_t)uid, &pw, buf, PW_BUF, &res) == 0 && res != NULL &&
        res->pw_name != NULL && res->pw_name[0] != '\0' && gi_strlcpy(out, res->pw_name, len)) {
        free(buf);
        return;
    }
    free(buf);
    snprintf(out, len, "%lld", (long long)uid);
}

/* Builds root/pid/leaf into path (capacity len); false when too long. */
static int proc_path(char *path, size_t len, const char *root, int64_t pid, const char *leaf)
{
    int n = snprintf(path, len, "%s/%lld/%s", root, (long long)pid, leaf);
    return n > 0 && (size_t)n < len;
}

int procmap_fill(const char *root, struct gi_proc_obs *p)
{
    char path[4096];
    char *text = NULL;
    int64_t uid;
    int st;

    if (root == NULL)
        root = "/proc";
    if (p->pid < 1)
        return GI_INVALID;
    if (!proc_path(path, sizeof path, root, p->pid, "status"))
        return GI_INVALID;
    st = read_small(path, &text);
    if (st != GI_OK)
        goto cleanup;
    if (procmap_parse_uid(text, &uid) == GI_OK) {
        p->uid = uid;
        procmap_user_name(uid, p->user, sizeof p->user);
    }
    free(text);
    text = NULL;

    if (proc_path(path, sizeof path, root, p->pid, "cgroup") && read_small(path, &text) == GI_OK) {
        char cid[PROCMAP_ID_LEN], pod[PROCMAP_POD_UID_LEN];
        procmap_parse_cgroup(text, cid, sizeof cid, pod, sizeof pod);
        if (cid[0])
            gi_strlcpy(p->container, cid, sizeof p->container);
        if (pod[0])
            gi_strlcpy(p->pod_uid, pod, sizeof p->pod_uid);
    }
    free(text);
    text = NULL;

    if (p->name[0] == '\0' && proc_path(path, sizeof path, root, p->pid, "comm") &&
        read_small(path, &text) == GI_OK) {
        text[strcspn(text, "\n")] = '\0';
        if (text[0] != '\0' && gi_text_ok(text))
            gi_strlcpy(p->name, text, sizeof p->name);
    }

cleanup:
    free(text);
    return st;
}

int procmap_fill_all(const char *root, struct gi_obs_set *set)
{
    for (size_t i = 0; i < set->nprocs; i++)
        procmap_fill(root, &set->procs[i]);
    return GI_OK;
}
