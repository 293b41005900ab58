/* Pure parsers for nvidia-smi output: the CSV of --query-gpu and
 * --query-compute-apps, the XML of -q -x, and the listing of -L.
 *
 * Every parser reads bytes (borrowed; need not be NUL-terminated) and
 * appends observations to a caller-owned set. Placeholders such as
 * "[N/A]", "N/A", "[Not Supported]", "[Insufficient Permissions]" or an
 * empty field become "absent" (NAN / -1 / ""), never zero. Numbers are
 * read under the C locale; unit suffixes ("MiB", "W", "%", "MHz", "C")
 * are accepted and checked. PCI bus ids are normalized to "0000:83:00.0".
 *
 * Per field: a value that cannot be read ("ERR!", a word or a wrong unit
 * where a number belongs, text that is not text) or a reading out of
 * range (gi_gpu_obs_sanitize) is absent, the GPU or process is kept, and
 * the value is counted in out->nwarnings (out->warning names the first:
 * line and column, or <gpu> and element). A hidden pid makes an
 * anonymous process (pid -1). Only structure fails a parse: a row with
 * the wrong number of fields, a header that is not field names, an
 * overlong line, a NUL byte, XML that is not well-formed.
 *
 * On failure nothing is appended (the set, warnings included, is
 * restored to its state on entry) and err receives one line naming the
 * input line or element and the reason. Inputs larger than
 * NVSMI_MAX_INPUT are refused. */
#ifndef GI_PARSE_NVSMI_H
#define GI_PARSE_NVSMI_H

#include <stddef.h>
#include <stdint.h>

#include "core/observation.h"

#define NVSMI_MAX_INPUT (32u * 1024u * 1024u)
#define NVSMI_MAX_LINE 65536
/* A good size for err buffers; shorter ones get a truncated message. */
#define NVSMI_ERR_LEN 256

/* Parses `nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`.
 * Columns are found by name: from the header line when fields is NULL,
 * otherwise from fields, the comma-separated list given to --query-gpu
 * (for noheader output). Aliases (gpu_uuid/uuid, gpu_name/name,
 * gpu_bus_id/pci.bus_id, gpu_serial/serial, clocks_throttle_reasons.* /
 * clocks_event_reasons.*) are accepted; unknown columns are ignored.
 * Appends one NVIDIA GPU per row; a row that is wholly placeholders is
 * skipped. Returns GI_OK, GI_INVALID (err says which line and why) or
 * GI_TOO_LARGE. "No devices were found" means zero GPUs; a line "Unable
 * to determine the device handle for GPU<bus>: <reason>" (a GPU lost
 * from the bus) yields a GPU known only by its bus id. */
int nvsmi_parse_query_gpu(const char *data, size_t len, const char *fields, struct gi_obs_set *out,
                          char *err, size_t errlen);

/* Parses `nvidia-smi --query-compute-apps=… --format=csv[,…]`; fields as
 * above ("name" here means process_name, "used_memory" used_gpu_memory).
 * Fields are not quoted: a process name may hold commas, which are kept
 * in the name because the column count is known. Rows that are wholly
 * placeholders (containers print "[Insufficient Permissions]") are
 * skipped; a header alone means no processes. Appends to out->procs. */
int nvsmi_parse_compute_apps(const char *data, size_t len, const char *fields,
                             struct gi_obs_set *out, char *err, size_t errlen);

/* Parses `nvidia-smi -q -x` (root <nvidia_smi_log>). Appends one GPU per
 * <gpu> element in document order (index = that position), each followed
 * by one observation per <mig_device> (parent_uuid = the GPU's uuid,
 * index = the MIG device index, mig_instance = its GPU instance id;
 * uuid and mig_profile only when the element carries them), and one
 * process per <process_info>. driver_version and the root timestamp
 * (read as UTC) are copied into every GPU. attached_gpus is not trusted:
 * the <gpu> elements are what count. Power is read from <power_readings>
 * (drivers before 535), <gpu_power_readings> (535) or the
 * average/instant draws of later drivers. No external entities, DTDs or
 * network; entity references are never expanded. */
int nvsmi_parse_xml(const char *data, size_t len, struct gi_obs_set *out, char *err, size_t errlen);

/* Parses `nvidia-smi -L`: "GPU 0: NAME (UUID: GPU-…)" lines and the MIG
 * lines under them, "  MIG 1g.10gb Device 0: (UUID: MIG-…)" or the old
 * "(UUID: MIG-GPU-<uuid>/<gi>/<ci>)". A MIG line becomes a child of the
 * GPU above it (parent_uuid, mig_profile, index = its device number,
 * mig_instance when the old form names it); that GPU gets mig_mode 1. */
int nvsmi_parse_list(const char *data, size_t len, struct gi_obs_set *out, char *err,
                     size_t errlen);

/* Parses an nvidia-smi timestamp "YYYY/MM/DD HH:MM:SS[.mmm]" into ms
 * since the epoch, reading it as UTC (nvidia-smi prints host local
 * time; the caller corrects if it knows the zone). GI_OK or GI_INVALID. */
int nvsmi_parse_time(const char *s, int64_t *ms);

#endif
