/* Maps a process id to who runs it: uid and user name from
 * /proc/PID/status, container id and Kubernetes pod UID from
 * /proc/PID/cgroup (cgroup v1 and v2, systemd and cgroupfs drivers,
 * docker, containerd, CRI-O, podman). Reads are bounded; a process that
 * exited or a file that cannot be read leaves the fields absent. */
#ifndef GI_PROCMAP_H
#define GI_PROCMAP_H

#include "core/observation.h"

#include <stddef.h>
#include <stdint.h>

/* Longest /proc file read; the rest is ignored. */
#define PROCMAP_MAX_FILE 65536
/* Longest container id kept (runtimes use 64 hex digits). */
#define PROCMAP_ID_LEN 65
/* A pod UID, 36 characters and the terminator. */
#define PROCMAP_POD_UID_LEN 37

/* Fills p->uid, p->user, p->container and p->pod_uid for p->pid from the
 * proc file system under root (NULL for "/proc"), and p->name from
 * /proc/PID/comm when p->name is empty. Fields that cannot be learned are
 * left as they were. Returns GI_OK, GI_NOT_FOUND when the process is gone
 * (no status file), GI_INVALID for a pid < 1. */
int procmap_fill(const char *root, struct gi_proc_obs *p);

/* procmap_fill for every process of set; returns GI_OK. */
int procmap_fill_all(const char *root, struct gi_obs_set *set);

/* Parses the real uid from the text of a status file (the first number
 * of its "Uid:" line). Returns GI_OK or GI_NOT_FOUND. */
int procmap_parse_uid(const char *status, int64_t *uid);

/* Parses the text of a cgroup file: container id (lower-case hex, without
 * runtime prefix) into container (capacity clen) and the pod UID with
 * dashes into pod_uid (capacity plen); either becomes "" when absent or
 * when it does not fit. Returns GI_OK when at least one was written, else
 * GI_NOT_FOUND. */
int procmap_parse_cgroup(const char *cgroup, char *container, size_t clen, char *pod_uid,
                         size_t plen);

/* The user name of uid (the number in decimal when the system has no
 * name for it) into out (capacity len). */
void procmap_user_name(int64_t uid, char *out, size_t len);

#endif
