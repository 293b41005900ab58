/* Processes holding a Gaudi device open, found from the proc file system:
 * every /proc/PID/fd/N that links to /dev/accel/accelM (or the legacy
 * /dev/hlM), with M mapped to its PCI bus id through
 * /sys/class/accel/accelM/device (legacy /sys/class/habanalabs/hlM/device).
 * Only processes the agent may look into are seen: all of them as root,
 * its own user's otherwise. Reads are bounded. */
#ifndef GI_ACCELFD_H
#define GI_ACCELFD_H

#include "core/observation.h"

#include <stddef.h>

/* Most processes and descriptors looked at in one scan. */
#define ACCELFD_MAX_PIDS 65536
#define ACCELFD_MAX_FDS 4096

/* Scans root/proc and root/sys (root "" or NULL for "/") and merges what it
 * finds into set's processes on the GPUs set->gpus[first..] (matched by
 * bus id; a device whose bus matches none of them is ignored): a process
 * already listed on that GPU with the same pid is left alone, an
 * anonymous one (pid -1, as the hl-smi table prints in a container) gets
 * the pid, and any other becomes a new process without memory figures.
 * Returns how many processes it added or named. */
size_t accelfd_scan(const char *root, struct gi_obs_set *set, size_t first);

/* The device number M of a descriptor's link target "/dev/accel/accelM" or
 * "/dev/hlM"; -1 for anything else (the control nodes accel_controlDM and
 * hlM_control included). *legacy is set for /dev/hlM. */
int accelfd_minor(const char *target, int *legacy);

#endif
