/* Cloud GPU instances as the cloud APIs (AWS EC2, GCP Compute Engine,
 * Azure Compute) describe them, reduced to what gpuinv records. Each
 * provider's parser fills these; the store turns them into GPU records
 * with the identity "cloud:<provider>:<instance_id>:<index>" until an
 * agent on the instance reports the real UUID. A field the API did not
 * give, or gave unreadably, is left absent ("" or -1), never guessed. */
#ifndef GI_CLOUD_H
#define GI_CLOUD_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct cloud_tag {
    char *key;
    char *value;
};

/* Normalized instance states; the provider's own word is kept in
 * state_raw. Only CLOUD_RUNNING counts as the GPUs being allocated. */
enum cloud_state {
    CLOUD_UNKNOWN = 0,
    CLOUD_PENDING,
    CLOUD_RUNNING,
    CLOUD_STOPPING,
    CLOUD_STOPPED,
    CLOUD_TERMINATED,
};

struct cloud_instance {
    char provider[8];       /* "aws", "gcp" or "azure" */
    char instance_id[128];  /* i-0abc..., the GCP numeric id, the Azure vmId */
    char name[256];         /* Name tag, GCP name, Azure VM name; "" absent */
    char account[128];      /* AWS owner id, GCP project, Azure subscription */
    char region[64];        /* us-east-1, us-central1, eastus */
    char zone[64];          /* us-east-1a, us-central1-a, Azure zone "1"; "" absent */
    char machine_type[128]; /* p4d.24xlarge, a2-highgpu-1g, Standard_ND96asr_v4 */
    enum cloud_state state;
    char state_raw[64];
    int64_t launch_time;    /* unix seconds; 0 absent */
    char gpu_model[128];    /* "NVIDIA A100-SXM4-40GB", "nvidia-tesla-t4"; "" absent */
    int gpu_count;          /* -1 when the type's GPUs are unknown */
    int64_t gpu_memory_mib; /* per GPU; -1 absent */
    double gpu_fraction;    /* the share of a whole GPU each of gpu_count is
                             * (AWS g6f 0.125..0.5, Azure NVadsA10 1/6..1/2);
                             * 0 when whole or not known */
    char private_ip[64];    /* "" absent */
    struct cloud_tag *tags;
    size_t ntags;
};

/* Frees the tags of n instances (not the array itself). */
void cloud_instances_clear(struct cloud_instance *v, size_t n);

/* What the JSON parsers (GCP, Azure) share. A value left absent is
 * counted in *count; the first is described in first (len bytes). */
void cloud_vnote(size_t *count, char *first, size_t len, const char *fmt, va_list ap);
/* obj[key] as usable text, or NULL (absent, null or ""); a value of
 * another type is noted as "<what> <who>: <key> is not text". */
const char *cloud_text(const json_t *obj, const char *key, size_t *count, char *first, size_t len,
                       const char *what, const char *who);
/* Copies src into dst when it fits; one that does not fit is absent,
 * never cut. */
void cloud_copy(char *dst, size_t len, const char *src);
/* Sets ci's tags from an object of text values (field: "tags" or
 * "labels", item: "tag" or "label", for the notes); a value that is not
 * text is noted and skipped. GI_OK, or GI_INTERNAL out of memory. */
int cloud_tags_set(struct cloud_instance *ci, const json_t *tags, const char *what,
                   const char *field, const char *item, size_t *count, char *first, size_t len);

#endif
