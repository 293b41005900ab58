/* libFuzzer target: nvidia-smi --query-gpu / --query-compute-apps CSV and
 * -L listings. The first byte picks the parser and whether a noheader
 * field list is used; the rest is the input. */
#include <stddef.h>
#include <stdint.h>

#include "core/observation.h"
#include "parse/nvsmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char gpu_fields[] =
        "index,uuid,name,serial,pci.bus_id,memory.total,memory.used,utilization.gpu,"
        "temperature.gpu,power.draw,power.draw.average,enforced.power.limit,mig.mode.current,"
        "ecc.errors.corrected.volatile.total,timestamp";
    static const char app_fields[] =
        "timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory";
    struct gi_obs_set s = {0};
    char err[NVSMI_ERR_LEN];
    const char *in;
    uint8_t mode;

    if (size < 1)
        return 0;
    mode = data[0];
    in = (const char *)data + 1;
    size--;
    switch (mode % 5) {
    case 0:
        nvsmi_parse_query_gpu(in, size, NULL, &s, err, sizeof err);
        break;
    case 1:
        nvsmi_parse_query_gpu(in, size, gpu_fields, &s, err, sizeof err);
        break;
    case 2:
        nvsmi_parse_compute_apps(in, size, NULL, &s, err, sizeof err);
        break;
    case 3:
        nvsmi_parse_compute_apps(in, size, app_fields, &s, err, sizeof err);
        break;
    default:
        nvsmi_parse_list(in, size, &s, err, sizeof err);
        break;
    }
    gi_obs_free(&s);
    return 0;
}
