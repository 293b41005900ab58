/* Pure parsers for Intel Gaudi's hl-smi: the CSV query form
 * (`hl-smi -Q <fields> -f csv[,noheader][,nounits]`) and the process
 * section of the plain summary table (`hl-smi`).
 *
 * Bytes in (borrowed; need not be NUL-terminated), observations out,
 * appended to a caller-owned set with vendor GI_VENDOR_INTEL. A Habana
 * logging prefix ("[2024-11-06 04:40:27.206] [hlsmi] [info] ") in front
 * of a line is removed; blank lines are skipped.
 *
 * CSV columns are found by header name: each header cell is trimmed and a
 * trailing unit in brackets (" [MiB]", " [W]", " [C]", " [%]") removed,
 * because hl-smi keeps it even with nounits. Cells are split on ',' and
 * trimmed. Values may carry their unit ("98304 MiB", "226 W", "36 C",
 * "0 %") or not. "N/A", "[N/A]", an empty cell, a number where text
 * belongs that is not text, text where a number belongs, a wrong unit,
 * or a reading out of range (gi_gpu_obs_sanitize, and power above twice
 * the generation's cap) make that field absent, counted in
 * out->nwarnings; the GPU is kept. A row with fewer cells than the header
 * keeps what it has; one with more (a comma inside the name) is read
 * from both ends so that only the name takes the extra cells.
 *
 * Identity: uuid is hl-smi's AIP UUID ("01P0-HL2080A0-15-TG1C07-05-01-04"),
 * stable across reboots and slots; without one, "HL-SN-<serial>"; with
 * neither, uuid stays "" and a warning names the bus id (the GPU cannot
 * be reported). index is hl-smi's index, which is neither bus nor module
 * order. name is the generation and board, "Intel Gaudi2 HL-225"
 * (hlsmi_model_name).
 *
 * Only structure fails a parse: no header line where one is expected, a
 * header naming no hl-smi field, a field list that is not one, more than
 * GI_OBS_MAX GPUs. Then nothing is appended (warnings included) and err
 * gets one line naming the input line and the reason. Returns GI_OK,
 * GI_INVALID or GI_TOO_LARGE. */
#ifndef GI_PARSE_HLSMI_H
#define GI_PARSE_HLSMI_H

#include <stddef.h>

#include "core/observation.h"

#define HLSMI_MAX_INPUT (16u * 1024u * 1024u)
#define HLSMI_ERR_LEN 256

/* The fields the agent asks for (formats: one call gives identity and
 * readings). */
#define HLSMI_QUERY_FIELDS                                                                         \
    "index,module_id,bus_id,name,serial,uuid,driver_version,memory.total,memory.used,"             \
    "memory.free,utilization.aip,temperature.aip,power.draw"

/* Parses the CSV query output. fields NULL: the first line is the header;
 * otherwise fields is the comma-separated list given to -Q (noheader
 * output). Loop mode (-l) output is accepted: a repeated header line is
 * skipped, and a row whose index was already seen starts a new snapshot
 * that replaces the previous one, so each GPU is reported once with its
 * newest readings. Unknown columns are ignored. Zero rows append nothing
 * and succeed. */
int hlsmi_parse_query(const char *data, size_t len, const char *fields, struct gi_obs_set *out,
                      char *err, size_t errlen);

/* Parses the plain `hl-smi` table (layouts up to 1.18 and from 1.20) for
 * its "Compute Processes" section. Each process row names an AIP index;
 * the device rows above map the index to its bus id, and the process gets
 * the uuid of the GPU in out with that bus id (or only the bus id when out
 * has none). A row whose pid, name and memory are all N/A (nothing runs,
 * or hl-smi cannot see the pids, as in a container) is no process; a row
 * with memory but no pid is an anonymous process (pid -1). A table
 * without a process section appends nothing. Returns GI_OK, or
 * GI_INVALID when the text is not an hl-smi table at all, GI_TOO_LARGE. */
int hlsmi_parse_table(const char *data, size_t len, struct gi_obs_set *out, char *err,
                      size_t errlen);

/* Parses the per-device log of `hl-smi -q` (the same as `hl-smi -L`):
 * blocks "[N] AIP (accelN) 0000:43:00.0" with "Key : value" lines. For
 * each block whose bus id matches a GPU of out->gpus[first..], fills that
 * GPU's vbios with the firmware build named in "Firmware [SPI] Version"
 * (the "hl-gaudi2-1.17.0-fw-51.2.0-sec-9" part of "Preboot version …",
 * else the whole value), and its serial and uuid where the GPU has none
 * ("Serial Number", "AIP UUID"). Blocks for other buses are ignored.
 * Returns GI_OK, GI_INVALID when the text holds no device block at all,
 * GI_TOO_LARGE. */
int hlsmi_parse_log(const char *data, size_t len, struct gi_obs_set *out, size_t first, char *err,
                    size_t errlen);

/* The model name for an hl-smi board name ("HL-225") and/or AIP UUID
 * (either may be "" or NULL): "Intel Gaudi HL-205", "Intel Gaudi2 HL-225",
 * "Intel Gaudi2E HL-288E", "Intel Gaudi3 HL-325L". The generation comes
 * from the board name, else from the UUID's part number (HL2000 Gaudi,
 * HL2080 Gaudi2, HL3090 Gaudi3). An unknown board is "Intel <board>";
 * neither known gives "". */
void hlsmi_model_name(const char *board, const char *uuid, char *out, size_t cap);

/* The table power cap in W of the generation named by hlsmi_model_name's
 * output (350, 600, 450, 900), or 0 when unknown. */
double hlsmi_power_cap_w(const char *model);

#endif
