/* libFuzzer target for the Kubernetes parsers. The first byte picks the
 * entry point (node list, pod list, or a quantity); the rest is the input.
 * Checks invariants the parsers promise on every result. */
#include "core/status.h"
#include "parse/k8s.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Aborts when a string field is not terminated within its buffer. */
#define CHECK_STR(f)                                                                               \
    do {                                                                                           \
        if (memchr((f), '\0', sizeof(f)) == NULL)                                                  \
            abort();                                                                               \
    } while (0)

static void check_nodes(const char *data, size_t len)
{
    struct k8s_node_list l = {0};
    char err[K8S_ERR_LEN];
    int st = k8s_parse_node_list(data, len, &l, err, sizeof err);

    if (st == GI_OK && l.status.present)
        abort();
    if (st != GI_OK && err[0] == '\0')
        abort();
    CHECK_STR(l.meta.continue_token);
    for (size_t i = 0; i < l.nitems; i++) {
        const struct k8s_node *n = &l.items[i];
        CHECK_STR(n->name);
        CHECK_STR(n->product_base);
        CHECK_STR(n->warning);
        if (n->nres > K8S_MAX_NODE_RES || n->nmigs > K8S_MAX_MIG_LABELS)
            abort();
        if (n->physical_gpus < -1 || n->ready < -1 || n->ready > 1)
            abort();
    }
    k8s_node_list_free(&l);
}

static void check_pods(const char *data, size_t len)
{
    struct k8s_pod_list l = {0};
    char err[K8S_ERR_LEN];
    int st = k8s_parse_pod_list(data, len, &l, err, sizeof err);

    if (st != GI_OK && err[0] == '\0')
        abort();
    for (size_t i = 0; i < l.nitems; i++) {
        const struct k8s_pod *p = &l.items[i];
        CHECK_STR(p->name);
        CHECK_STR(p->warning);
        if (p->ncontainers > K8S_MAX_CONTAINERS || p->nlabels > K8S_MAX_POD_LABELS)
            abort();
        if (p->gpus < 0 || p->mig_devices < 0)
            abort();
        for (size_t k = 0; k < p->nlabels; k++)
            if (k8s_pod_label(p, p->labels[k].key) == NULL)
                abort();
    }
    k8s_pod_list_free(&l);
}

static void check_quantity(const char *data, size_t len)
{
    char s[K8S_MAX_QUANTITY + 8];
    struct k8s_quantity q;
    int64_t v;

    if (len >= sizeof s)
        len = sizeof s - 1;
    memcpy(s, data, len);
    s[len] = '\0';
    for (int shift = -3; shift <= 3; shift += 3)
        (void)k8s_quantity_parse(s, shift, &q);
    /* A count that parses is also a byte size of the same value. */
    if (k8s_quantity_count(s, &v) == GI_OK) {
        int64_t b;
        if (v < 0 || k8s_quantity_bytes(s, &b) != GI_OK || b != v)
            abort();
    }
    (void)k8s_quantity_milli(s, &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        check_nodes((const char *)data + 1, size - 1);
        break;
    case 1:
        check_pods((const char *)data + 1, size - 1);
        break;
    default:
        check_quantity((const char *)data + 1, size - 1);
        break;
    }
    return 0;
}
