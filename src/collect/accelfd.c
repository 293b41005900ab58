/* Gaudi device users from /proc/PID/fd; see accelfd.h. */
#define _GNU_SOURCE
#include "collect/accelfd.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int accelfd_minor(const char *target, int *legacy)
{
    static const char accel[] = "/dev/accel/accel", hl[] = "/dev/hl";
    const char *num;
    int64_t v;

    if (strncmp(target, accel, sizeof accel - 1) == 0) {
        num = target + sizeof accel - 1;
        *legacy = 0;
    } else if (strncmp(target, hl, sizeof hl - 1) == 0) {
        num = target + sizeof hl - 1;
        *legacy = 1;
    } else {
        return -1;
    }
    for (const char *q = num; *q; q++)
        if (!isdigit((unsigned char)*q))
            return -1;
    if (*num == '\0' || gi_parse_int64(num, 0, 65535, &v) != GI_OK)
        return -1;
    return (int)v;
}

/* The bus id of device M (from the sysfs link's last part), or -1. */
static int minor_bus(const char *root, int minor, int legacy, char bus[GI_BUS_LEN])
{
    char path[PATH_MAX], target[PATH_MAX];
    const char *base;
    ssize_t n;

    snprintf(path, sizeof path, "%s/sys/class/%s/%s%d/device", root,
             legacy ? "habanalabs" : "accel", legacy ? "hl" : "accel", minor);
    n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
        return -1;
    target[n] = '\0';
    base = strrchr(target, '/');
    base = base ? base + 1 : target;
    return gi_pci_normalize(base, bus) == 0 ? 0 : -1;
}

/* Adds or names the process pid on the GPU with this bus id. */
static size_t merge(struct gi_obs_set *set, size_t first, int64_t pid, const char *bus)
{
    const struct gi_gpu_obs *gpu = NULL;
    struct gi_proc_obs *p;

    for (size_t i = first; i < set->ngpus && gpu == NULL; i++)
        if (strcmp(set->gpus[i].pci_bus_id, bus) == 0 && set->gpus[i].parent_uuid[0] == '\0')
            gpu = &set->gpus[i];
    if (gpu == NULL)
        return 0;
    for (size_t i = 0; i < set->nprocs; i++)
        if (strcmp(set->procs[i].pci_bus_id, bus) == 0 && set->procs[i].pid == pid)
            return 0;
    for (size_t i = 0; i < set->nprocs; i++)
        if (strcmp(set->procs[i].pci_bus_id, bus) == 0 && set->procs[i].pid < 0) {
            set->procs[i].pid = pid;
            return 1;
        }
    if ((p = gi_obs_add_proc(set)) == NULL)
        return 0;
    p->pid = pid;
    gi_strlcpy(p->pci_bus_id, bus, sizeof p->pci_bus_id);
    gi_strlcpy(p->gpu_uuid, gpu->uuid, sizeof p->gpu_uuid);
    return 1;
}

size_t accelfd_scan(const char *root, struct gi_obs_set *set, size_t first)
{
    char path[PATH_MAX];
    DIR *proc;
    struct dirent *e;
    size_t pids = 0, found = 0;

    if (root == NULL || strcmp(root, "/") == 0)
        root = "";
    snprintf(path, sizeof path, "%s/proc", root);
    if ((proc = opendir(path)) == NULL)
        return 0;
    while ((e = readdir(proc)) != NULL && pids < ACCELFD_MAX_PIDS) {
        int64_t pid;
        DIR *fds;
        struct dirent *f;
        size_t nfd = 0;
        /* A process may hold the same device more than once. */
        int seen[16], nseen = 0;

        if (gi_parse_int64(e->d_name, 1, INT64_C(4194304) * 1024, &pid) != GI_OK)
            continue;
        pids++;
        snprintf(path, sizeof path, "%s/proc/%s/fd", root, e->d_name);
        if ((fds = opendir(path)) == NULL)
            continue; /* gone, or not ours to see */
        while ((f = readdir(fds)) != NULL && nfd++ < ACCELFD_MAX_FDS) {
            char link[PATH_MAX], target[256], bus[GI_BUS_LEN];
            ssize_t n;
            int legacy, minor, dup = 0;

            if (f->d_name[0] == '.')
                continue;
            snprintf(link, sizeof link, "%s/proc/%s/fd/%s", root, e->d_name, f->d_name);
            n = readlink(link, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if ((minor = accelfd_minor(target, &legacy)) < 0)
                continue;
            for (int i = 0; i < nseen; i++)
                dup |= seen[i] == minor;
            if (dup)
                continue;
            if (nseen < 16)
                seen[nseen++] = minor;
            if (minor_bus(root, minor, legacy, bus) == 0)
                found += merge(set, first, pid, bus);
        }
        closedir(fds);
    }
    closedir(proc);
    return found;
}
