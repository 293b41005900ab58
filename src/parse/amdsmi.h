/* Pure parsers for AMD's tools: `rocm-smi --json` and the pair
 * `amd-smi static --json` / `amd-smi metric --json`.
 *
 * Bytes in (borrowed; need not be NUL-terminated), observations out,
 * appended to a caller-owned set with vendor GI_VENDOR_AMD. Warning
 * lines printed before the JSON are skipped: parsing starts at the first
 * line that begins with '{' or '['; text after the JSON is ignored.
 * "N/A" and the other placeholders become absent. Values are accepted
 * as JSON numbers, as strings ("196592 MB", "139.0"), or as amd-smi's
 * {"value": …, "unit": …} objects; memory is converted to MiB (amd-smi's
 * "MB" is MiB), energy to joules. The GPU's uuid is the ASIC serial
 * ("Unique ID" in rocm-smi, asic.asic_serial in amd-smi), lower-cased so
 * both tools name the same GPU alike.
 *
 * Per field: a value that is not a number, a string that is not text,
 * a bus id that is not one, or a reading out of range
 * (gi_gpu_obs_sanitize) is absent and counted in out->nwarnings; the GPU
 * is kept. Only structure fails a parse (no JSON, the wrong shape, a
 * card that is not an object, a "gpu" that is not an index): then
 * nothing is appended (warnings included) and err gets one line naming
 * the card or entry and the reason. Returns GI_OK, GI_INVALID,
 * GI_TOO_LARGE. */
#ifndef GI_PARSE_AMDSMI_H
#define GI_PARSE_AMDSMI_H

#include <stddef.h>

#include "core/observation.h"

#define AMDSMI_MAX_INPUT (32u * 1024u * 1024u)
#define AMDSMI_ERR_LEN 256

/* Parses rocm-smi --json: {"card0": {"Card Series": …, "GPU use (%)": …},
 * …, "system": {"Driver version": …}}. One GPU per "cardN" key, in
 * order of N (index = N). Temperature is the edge sensor, else the
 * junction; power the current socket power, else the average. */
int amdsmi_parse_rocm(const char *data, size_t len, struct gi_obs_set *out, char *err,
                      size_t errlen);

/* Parses amd-smi static --json and metric --json (either may be NULL
 * with length 0) and merges them by the "gpu" index: one GPU per index,
 * identity from static, live values from metric. Both the bare array
 * and {"gpu_data": […]} forms are accepted. */
int amdsmi_parse(const char *static_json, size_t static_len, const char *metric_json,
                 size_t metric_len, struct gi_obs_set *out, char *err, size_t errlen);

#endif
