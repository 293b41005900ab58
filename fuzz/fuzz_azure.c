/* libFuzzer target for the Azure Resource Manager parsers. The first byte
 * picks the answer (VM list page, with or without a SKU list read from
 * the same bytes first; Resource SKUs; an error; a scale-set list; a
 * scale-set list and then, for each scale set, the same bytes as its
 * member page); the rest is the body. Checks the promises of azure.h on
 * every result. */
#include "core/status.h"
#include "parse/azure.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void check_text(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL)
        abort();
}

/* The promises of a parsed VM or member page. */
static void check_page(int st, const struct azure_page *p, const char *err)
{
    if (st != GI_OK && st != GI_INVALID && st != GI_INTERNAL)
        abort();
    if (st != GI_OK) {
        if (err[0] == '\0' || p->n != 0 || p->items != NULL)
            abort();
        return;
    }
    check_text(p->next, sizeof p->next);
    for (size_t i = 0; i < p->n; i++) {
        const struct cloud_instance *ci = &p->items[i];
        if (ci->instance_id[0] == '\0' || strcmp(ci->provider, "azure") != 0)
            abort();
        if (ci->gpu_count < -1 || ci->state > CLOUD_TERMINATED)
            abort();
        check_text(ci->name, sizeof ci->name);
        check_text(ci->state_raw, sizeof ci->state_raw);
        check_text(ci->gpu_model, sizeof ci->gpu_model);
        for (size_t t = 0; t < ci->ntags; t++)
            if (ci->tags[t].key == NULL || ci->tags[t].value == NULL)
                abort();
    }
}

/* A scale-set list, and with members each set's member page. */
static void scale_sets(const char *body, size_t len, bool members)
{
    struct azure_scale_sets sets = {0};
    struct azure_page p;
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX];
    int st = azure_parse_scale_sets(body, len, &sets, next, sizeof next, err, sizeof err);

    if ((st != GI_OK && st != GI_INVALID && st != GI_INTERNAL) || (st != GI_OK && !err[0]))
        abort();
    check_text(next, sizeof next);
    for (size_t i = 0; i < sets.n; i++) {
        const struct azure_scale_set *set = &sets.v[i];
        check_text(set->id, sizeof set->id);
        check_text(set->name, sizeof set->name);
        if (strncasecmp(set->id, "/subscriptions/", 15) != 0)
            abort();
        if (set->name[0] == '\0' && set->id[strlen(set->id) - 1] != '/')
            abort();
        if (set->tags && !json_is_object(set->tags))
            abort();
        if (!members)
            continue;
        st = azure_parse_vmss_vms(body, len, "fuzz", NULL, set, &p, err, sizeof err);
        check_page(st, &p, err);
        if (st == GI_OK)
            azure_page_free(&p);
    }
    azure_scale_sets_free(&sets);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct azure_skus skus = {0};
    struct azure_page p;
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX], msg[160];
    const char *body = (const char *)data + 1;
    int st;

    if (size == 0)
        return 0;
    switch (data[0] % 6) {
    case 0:
    case 1:
        if (data[0] % 6 == 1) {
            st = azure_parse_skus(body, size - 1, &skus, next, sizeof next, err, sizeof err);
            if ((st != GI_OK && st != GI_INVALID && st != GI_INTERNAL) ||
                (st != GI_OK && err[0] == '\0'))
                abort();
        }
        st = azure_parse_vms(body, size - 1, "fuzz", &skus, &p, err, sizeof err);
        check_page(st, &p, err);
        if (st == GI_OK)
            azure_page_free(&p);
        break;
    case 2:
        st = azure_parse_skus(body, size - 1, &skus, next, sizeof next, err, sizeof err);
        if (st != GI_OK && st != GI_INVALID && st != GI_INTERNAL)
            abort();
        for (size_t i = 0; i < skus.n; i++)
            if (skus.v[i].gpus < 0 || azure_skus_gpus(&skus, skus.v[i].name) != skus.v[i].gpus)
                abort();
        break;
    case 3:
        azure_error_message(body, size - 1, msg, sizeof msg);
        check_text(msg, sizeof msg);
        break;
    default:
        scale_sets(body, size - 1, data[0] % 6 == 5);
    }
    azure_skus_free(&skus);
    return 0;
}
