/* The demo fleet: deterministic, so screenshots and tests see the same
 * names every time. Written through the store like any other client. */
#include "demo/demo.h"
#include "core/log.h"
#include "core/status.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name, *location, *code;
    int rows;
} dcs[] = {
    {"Frankfurt DC1", "europe-west3 (Frankfurt)", "fra1", 12},
    {"Ashburn DC2", "us-east4 (Ashburn, VA)", "iad2", 20},
    {"Pune DC3", "centralindia (Pune)", "pnq3", 8},
};
static const struct {
    const char *model, *vendor, *server;
    int per_dc[3];
} fleet[] = {
    {"NVIDIA H100 80GB HBM3", "Supermicro", "SYS-821GE-TNHR", {8, 10, 4}},
    {"NVIDIA A100-SXM4-80GB", "Dell", "PowerEdge XE8545", {6, 8, 4}},
    {"NVIDIA L40S", "HPE", "ProLiant DL380a Gen11", {6, 8, 6}},
};
static const char *const tenants[][2] = {
    {"ml-research", "llm-pretrain"}, {"inference", "chat-serving"}, {"vision", "detector-v7"},
    {"speech", "asr-finetune"},      {"platform", "ci-gpu"},
};

static unsigned long rng = 42;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005UL + 1442695040888963407UL;
    return (unsigned)((rng >> 33) % n);
}

static int add(struct store *st, struct store_resource *r, json_t *attrs, int64_t *id)
{
    json_t *out = NULL;
    json_t *md = json_pack("{s:s}", "source", "demo");
    int rc;

    r->attrs = attrs;
    r->metadata = md;
    rc = store_res_create(st, "demo", r, &out);
    if (rc == GI_OK && id)
        *id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    json_decref(attrs);
    json_decref(md);
    return rc;
}

int demo_fill(struct store *st)
{
    struct store_page pg = {.limit = 1};
    json_t *items = NULL;
    int64_t total = 0;
    char name[64], host[128], serial[32], addr[32];
    int rc = store_dc_list(st, NULL, &pg, &items, &total);

    json_decref(items);
    if (rc != GI_OK || total > 0)
        return rc;
    for (int d = 0; d < 3; d++) {
        struct store_dc dc = {dcs[d].name, dcs[d].location, dcs[d].rows};
        json_t *out = NULL;
        int64_t dcid, servers[64];
        int ns = 0;

        if ((rc = store_dc_create(st, "demo", &dc, &out)) != GI_OK)
            return rc;
        dcid = json_integer_value(json_object_get(out, "id"));
        json_decref(out);
        for (int f = 0; f < 3; f++) {
            for (int i = 0; i < fleet[f].per_dc[d]; i++) {
                struct store_resource r = {.datacenter_id = dcid, .kind = "server"};
                int n = ns + 1;
                unsigned t = rnd(10);
                snprintf(name, sizeof name, "%s-gpu-%03d", dcs[d].code, n);
                snprintf(host, sizeof host, "%s.%s.gpuinv.example", name, dcs[d].code);
                snprintf(serial, sizeof serial, "SN%c%07u", 'A' + d, 1000 + rnd(9000000));
                r.name = name;
                r.gpu_model = fleet[f].model;
                r.gpu_count = 8;
                r.state = "available";
                if (t < 5) { /* about half the fleet is in use */
                    unsigned k = rnd(5);
                    r.state = "in_use";
                    r.tenant = tenants[k][0];
                    r.project = tenants[k][1];
                } else if (t == 5) {
                    r.state = "maintenance";
                } else if (t == 6) {
                    r.state = "reserved";
                    r.tenant = "platform";
                    r.project = "capacity-buffer";
                }
                rc = add(
                    st, &r,
                    json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:i}", "hostname",
                              host, "serial", serial, "vendor", fleet[f].vendor, "model",
                              fleet[f].server, "rack", (char[]){'R', (char)('A' + n % 6), 0}, "row",
                              (char[]){(char)('1' + n % 4), 0}, "position", (int)(2 + (n % 8) * 5),
                              "cpu", f == 2 ? "AMD EPYC 9354 (2x32c)" : "Intel Xeon 8480+ (2x56c)",
                              "cpu_cores", f == 2 ? 64 : 112, "memory_gb", f == 2 ? 1024 : 2048),
                    &servers[ns]);
                if (rc != GI_OK)
                    return rc;
                ns++;
            }
        }
        /* VMs carved out of a few L40S servers for inference tenants. */
        for (int i = 0; i < 6; i++) {
            struct store_resource r = {.datacenter_id = dcid, .kind = "vm"};
            unsigned k = rnd(5);
            snprintf(name, sizeof name, "%s-vm-%02d", dcs[d].code, i + 1);
            r.name = name;
            r.gpu_model = "NVIDIA L40S";
            r.gpu_count = 1 + (int)rnd(2);
            r.state = i % 3 ? "in_use" : "available";
            if (i % 3) {
                r.tenant = tenants[k][0];
                r.project = tenants[k][1];
            }
            rc = add(st, &r,
                     json_pack("{s:I, s:i, s:i, s:s}", "host_id",
                               (json_int_t)servers[ns - 1 - i % 3], "vcpu", 16 << (i % 2),
                               "memory_gb", 128 << (i % 2), "image", "ubuntu-22.04-cuda-12.4"),
                     NULL);
            if (rc != GI_OK)
                return rc;
        }
        for (int i = 0; i < 4; i++) {
            struct store_resource r = {.datacenter_id = dcid, .kind = "storage"};
            static const char *const types[] = {"file", "block", "object", "file"};
            static const char *const protos[] = {"NFSv4.1", "NVMe-oF", "S3", "Lustre"};
            snprintf(name, sizeof name, "%s-stor-%02d", dcs[d].code, i + 1);
            r.name = name;
            r.state = i == 1 ? "in_use" : "available";
            if (i == 1) {
                r.tenant = "ml-research";
                r.project = "llm-pretrain";
            }
            rc = add(st, &r,
                     json_pack("{s:s, s:f, s:s, s:s}", "storage_type", types[i], "capacity_tb",
                               (double)(200 * (i + 1)), "protocol", protos[i], "vendor",
                               i == 2 ? "MinIO" : "NetApp"),
                     NULL);
            if (rc != GI_OK)
                return rc;
        }
        for (int i = 0; i < 6; i++) {
            struct store_resource r = {
                .datacenter_id = dcid, .kind = "switch", .state = "available"};
            snprintf(name, sizeof name, "%s-tor-%02d", dcs[d].code, i + 1);
            snprintf(addr, sizeof addr, "10.%d.0.%d", 10 + d, 10 + i);
            r.name = name;
            rc = add(st, &r,
                     json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "vendor", "Arista", "model",
                               i < 4 ? "7060X5" : "7800R3", "ports", i < 4 ? 64 : 576, "speed_gbps",
                               i < 4 ? 400 : 100, "mgmt_address", addr, "rack",
                               (char[]){'R', (char)('A' + i), 0}),
                     NULL);
            if (rc != GI_OK)
                return rc;
        }
        for (int i = 0; i < 4; i++) {
            struct store_resource r = {
                .datacenter_id = dcid, .kind = "infiniband", .state = "available"};
            snprintf(name, sizeof name, "%s-ib-%02d", dcs[d].code, i + 1);
            r.name = name;
            rc = add(st, &r,
                     json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "fabric",
                               i < 2 ? "compute-a" : "compute-b", "device_type", "switch",
                               "generation", d == 2 ? "HDR" : "NDR", "ports", 64, "vendor",
                               "NVIDIA", "model", d == 2 ? "QM8700" : "QM9700"),
                     NULL);
            if (rc != GI_OK)
                return rc;
        }
    }
    gi_info("demo fleet created");
    return GI_OK;
}
