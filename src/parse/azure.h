/* Azure Resource Manager answers (jansson) into cloud instance records:
 *
 *   Virtual Machines - List All  {"value": [{id, name, location, zones,
 *                                tags, properties{vmId, hardwareProfile
 *                                {vmSize}, timeCreated, instanceView
 *                                {statuses[]}}}], "nextLink"}
 *                                (asked with statusOnly=true, so that each
 *                                VM carries its instance view)
 *   Resource SKUs                {"value": [{resourceType, name,
 *                                capabilities[{name, value}]}], "nextLink"}
 *   Virtual Machine Scale Sets - List All
 *                                {"value": [{id, name, tags, properties
 *                                {orchestrationMode}}], "nextLink"}
 *   Virtual Machine Scale Set VMs - List ($expand=instanceView)
 *                                {"value": [{instanceId, name, location,
 *                                zones, tags, sku{name}, properties{vmId,
 *                                osProfile{computerName}, instanceView
 *                                {statuses[]}}}], "nextLink"}
 *
 * Per VM: instance_id the vmId (the name when there is none), name
 * osProfile.computerName (the host name an agent or Kubernetes node
 * reports; the resource name when there is none),
 * region the location, zone the first of zones, machine type the vmSize,
 * launch time timeCreated (0-7 fractional digits, Z or +00:00), tags, and
 * the state from the first instance-view status whose code starts with
 * "PowerState/" (state_raw keeps the word: "stopped" still holds and bills
 * the hardware, "deallocated" does not; neither counts as allocated).
 * GPUs: the count from the SKU list's "GPUs" capability (a string), the
 * model from a built-in size table; sizes that share a GPU (NVadsA10_v5
 * below NV36) are recorded as the one virtual GPU they get, with its
 * profile's model and memory, whatever the SKU count says. A size neither
 * the SKU list nor the table knows is gpu_count -1. Sizes and resource
 * names are compared case-insensitively. A scale set member is read the
 * same way; its size is hardwareProfile.vmSize or else its sku name, and
 * a member without tags has its scale set's. A value of the wrong type is
 * left absent and counted in `warnings`; only the structure fails a
 * page. */
#ifndef GI_PARSE_AZURE_H
#define GI_PARSE_AZURE_H

#include "parse/cloud.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AZURE_ERR_LEN 256
#define AZURE_URL_MAX 4096

/* VM sizes and their GPU counts (0 for sizes without GPUs), from the
 * Resource SKUs list. */
struct azure_sku {
    char name[128];
    int gpus;
};
struct azure_skus {
    struct azure_sku *v;
    size_t n, cap;
};

struct azure_page {
    struct cloud_instance *items;
    size_t n;
    char next[AZURE_URL_MAX]; /* nextLink; "" on the last page */
    size_t warnings;
    char warning[AZURE_ERR_LEN];
};

/* Parses one List All page (body borrowed); subscription is the account
 * of every VM; skus (borrowed, may be NULL) gives GPU counts. GI_OK with
 * *p filled (free with azure_page_free); GI_INVALID with err filled (also
 * for a nextLink that does not fit); GI_INTERNAL out of memory. */
int azure_parse_vms(const char *body, size_t len, const char *subscription,
                    const struct azure_skus *skus, struct azure_page *p, char *err, size_t errlen);
void azure_page_free(struct azure_page *p);

/* One virtual machine scale set of the list. */
struct azure_scale_set {
    char id[1024];  /* its resource id, "/subscriptions/.../virtualMachineScaleSets/<name>" */
    char name[256]; /* its name (the id's last segment when absent) */
    bool flexible;  /* orchestrationMode Flexible: its members are in the VM list */
    json_t *tags;   /* its tags (a reference it holds), NULL when it has none */
};
struct azure_scale_sets {
    struct azure_scale_set *v;
    size_t n, cap;
};

/* Appends the scale sets of one List All page to s and copies its
 * nextLink into next ("" at the end). A scale set whose id is not a
 * resource id of this API fails the page (its members could not be
 * read). GI_OK, GI_INVALID with err filled, GI_INTERNAL. */
int azure_parse_scale_sets(const char *body, size_t len, struct azure_scale_sets *s, char *next,
                           size_t nextlen, char *err, size_t errlen);
void azure_scale_sets_free(struct azure_scale_sets *s);

/* Parses one page of a Uniform scale set's members (set borrowed, its
 * tags given to members without any) as azure_parse_vms does. */
int azure_parse_vmss_vms(const char *body, size_t len, const char *subscription,
                         const struct azure_skus *skus, const struct azure_scale_set *set,
                         struct azure_page *p, char *err, size_t errlen);

/* Appends the virtual machine sizes of one Resource SKUs page to s (each
 * name once) and copies its nextLink into next ("" at the end). GI_OK,
 * GI_INVALID with err filled, GI_INTERNAL. */
int azure_parse_skus(const char *body, size_t len, struct azure_skus *s, char *next, size_t nextlen,
                     char *err, size_t errlen);
/* The GPU count of a size: from the list, else -1. */
int azure_skus_gpus(const struct azure_skus *s, const char *size);
void azure_skus_free(struct azure_skus *s);

/* What the built-in table says of a size: returns the GPU count, or -1
 * when it does not know the size; fills model and mem_mib (per GPU), and
 * *shared when the size gets a part of one GPU. */
int azure_size_gpus(const char *size, char *model, size_t mlen, int64_t *mem_mib, int *shared);

/* The message of an error answer ({"error": {"code", "message"}}, or
 * Entra ID's {"error", "error_description"}) into out; "" when none. */
void azure_error_message(const char *body, size_t len, char *out, size_t outlen);

#endif
