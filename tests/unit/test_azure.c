/* Azure Resource Manager answers (tests/fixtures/azure) into cloud
 * instance records: VM list pages with nextLink, power states from the
 * instance view, sizes in any case, GPU counts from the Resource SKUs list
 * with models from the size table, shared A10 sizes, unknown sizes,
 * timestamps with 0-7 fractional digits, values of the wrong type. */
#include "unit.h"

#include <string.h>

#include "parse/azure.h"

#define SUB "00000000-1111-2222-3333-444444444444"

static void load_skus(struct azure_skus *s)
{
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX];
    size_t len;
    char *d = unit_fixture("azure", "skus.json", &len);

    memset(s, 0, sizeof *s);
    if (azure_parse_skus(d, len, s, next, sizeof next, err, sizeof err) != GI_OK)
        fail_msg("skus.json: %s", err);
    assert_string_equal(next, "");
    free(d);
}

static struct azure_page load(const char *name, const struct azure_skus *skus)
{
    struct azure_page p;
    char err[AZURE_ERR_LEN];
    size_t len;
    char *d = unit_fixture("azure", name, &len);

    if (azure_parse_vms(d, len, SUB, skus, &p, err, sizeof err) != GI_OK)
        fail_msg("%s: %s", name, err);
    free(d);
    return p;
}

static const char *tag(const struct cloud_instance *ci, const char *key)
{
    for (size_t i = 0; i < ci->ntags; i++)
        if (strcmp(ci->tags[i].key, key) == 0)
            return ci->tags[i].value;
    return NULL;
}

static void skus(void **state)
{
    struct azure_skus s;

    (void)state;
    load_skus(&s);
    /* Each size once, disks left out, an unreadable count left out. */
    assert_int_equal(s.n, 5);
    assert_int_equal(azure_skus_gpus(&s, "standard_nd96isr_h100_v5"), 8);
    assert_int_equal(azure_skus_gpus(&s, "Standard_D4s_v5"), 0);
    assert_int_equal(azure_skus_gpus(&s, "Standard_Weird"), -1);
    assert_int_equal(azure_skus_gpus(&s, "Premium_LRS"), -1);
    azure_skus_free(&s);
}

static void page_one(void **state)
{
    struct azure_skus s;
    struct azure_page p;
    const struct cloud_instance *a, *b;

    (void)state;
    load_skus(&s);
    p = load("vms-page1.json", &s);
    a = &p.items[0];
    b = &p.items[1];
    assert_int_equal(p.n, 2);
    assert_int_equal(p.warnings, 0);
    assert_string_equal(p.next,
                        "{{base}}/subscriptions/" SUB
                        "/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01"
                        "&statusOnly=true&$skiptoken=cGFnZTI");
    assert_string_equal(a->provider, "azure");
    assert_string_equal(a->instance_id, "6f1c2a3b-0000-4000-8000-000000000001");
    assert_string_equal(a->name, "nd-h100-01");
    assert_string_equal(a->account, SUB);
    assert_string_equal(a->region, "eastus");
    assert_string_equal(a->zone, "1");
    assert_string_equal(a->machine_type, "Standard_ND96isr_H100_v5");
    assert_int_equal(a->state, CLOUD_RUNNING);
    assert_string_equal(a->state_raw, "running");
    assert_int_equal(a->launch_time, 1741064767); /* 7 fractional digits, +00:00 */
    assert_string_equal(a->gpu_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(a->gpu_count, 8);
    assert_string_equal(tag(a, "team"), "llm");
    /* The size in upper case still matches; deallocated is stopped. */
    assert_string_equal(b->gpu_model, "Tesla T4");
    assert_int_equal(b->gpu_count, 1);
    assert_int_equal(b->state, CLOUD_STOPPED);
    assert_string_equal(b->state_raw, "deallocated");
    assert_int_equal(b->launch_time, 1587762124); /* Z */
    assert_int_equal(b->ntags, 0);
    assert_string_equal(b->zone, "");
    azure_page_free(&p);
    azure_skus_free(&s);
}

static void page_two(void **state)
{
    struct azure_skus s;
    struct azure_page p;

    (void)state;
    load_skus(&s);
    p = load("vms-page2.json", &s);
    assert_int_equal(p.n, 4);
    assert_string_equal(p.next, "");
    /* A sixth of an A10: one virtual GPU with its profile's memory,
     * whatever the SKU count says. */
    assert_string_equal(p.items[0].gpu_model, "NVIDIA A10-4Q");
    assert_int_equal(p.items[0].gpu_count, 1);
    assert_int_equal(p.items[0].gpu_memory_mib, 4096);
    assert_true(p.items[0].gpu_fraction > 0.166 && p.items[0].gpu_fraction < 0.167);
    assert_int_equal(p.items[0].launch_time, 1571094682); /* no fraction */
    /* stopped still holds the hardware, but is not running. */
    assert_int_equal(p.items[1].state, CLOUD_STOPPED);
    assert_string_equal(p.items[1].state_raw, "stopped");
    assert_int_equal(p.items[1].gpu_count, 1);
    assert_string_equal(p.items[1].gpu_model, "NVIDIA A100 80GB PCIe");
    assert_true(p.items[1].gpu_fraction == 0); /* whole */
    /* A size neither list knows: unknown. */
    assert_int_equal(p.items[2].gpu_count, -1);
    assert_string_equal(p.items[2].gpu_model, "");
    assert_int_equal(p.items[2].launch_time, 0);
    /* A size the SKU list knows without GPUs. */
    assert_int_equal(p.items[3].gpu_count, 0);
    azure_page_free(&p);
    /* Without the SKU list the table still counts the sizes it knows. */
    p = load("vms-page2.json", NULL);
    assert_int_equal(p.items[1].gpu_count, 1);
    assert_int_equal(p.items[3].gpu_count, -1);
    azure_page_free(&p);
    azure_skus_free(&s);
}

/* The NVadsA10_v5 sizes: partial A10s up to NV18ads, whole from NV36ads;
 * the other sizes whole. */
static void a10_shares(void **state)
{
    static const struct {
        const char *size;
        int count;
        double fraction;
    } want[] = {{"Standard_NV6ads_A10_v5", 1, 1.0 / 6}, {"Standard_NV12ads_A10_v5", 1, 1.0 / 3},
                {"standard_nv18ads_a10_v5", 1, 0.5},    {"Standard_NV36ads_A10_v5", 1, 0},
                {"Standard_NV36adms_A10_v5", 1, 0},     {"Standard_NV72ads_A10_v5", 2, 0},
                {"Standard_ND96isr_H100_v5", 8, 0}};
    char model[128];
    int64_t mem;
    double f;

    (void)state;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        f = -1;
        assert_int_equal(azure_size_gpus(want[i].size, model, sizeof model, &mem, &f),
                         want[i].count);
        assert_true(f > want[i].fraction - 1e-9 && f < want[i].fraction + 1e-9);
    }
    f = -1;
    assert_int_equal(azure_size_gpus("Standard_D4s_v5", model, sizeof model, &mem, &f), -1);
    assert_true(f == 0);
}

static void odd_values(void **state)
{
    struct azure_page p = load("vms-odd.json", NULL);

    (void)state;
    /* The VM with neither vmId nor name and the number are left out. */
    assert_int_equal(p.n, 3);
    assert_true(p.warnings >= 4);
    assert_string_equal(p.next, "");
    assert_string_equal(p.items[0].instance_id, "no-view");
    assert_int_equal(p.items[0].state, CLOUD_UNKNOWN);
    assert_string_equal(p.items[0].state_raw, "");
    assert_int_equal(p.items[0].gpu_count, 8); /* from the size table */
    assert_int_equal(p.items[0].launch_time, 0);
    assert_int_equal(p.items[0].ntags, 1);
    assert_string_equal(tag(&p.items[0], "ok"), "yes");
    assert_string_equal(p.items[1].name, "bad-props");
    assert_string_equal(p.items[1].zone, "");
    assert_string_equal(p.items[1].machine_type, "");
    assert_int_equal(p.items[1].gpu_count, -1);
    assert_string_equal(p.items[2].instance_id, "x-7");
    assert_int_equal(p.items[2].state, CLOUD_UNKNOWN);
    assert_string_equal(p.items[2].state_raw, "hibernated");
    azure_page_free(&p);
}

static void errors(void **state)
{
    struct azure_page p;
    struct azure_skus s = {0};
    char err[AZURE_ERR_LEN], next[64];
    size_t len;
    char *d = unit_fixture("azure", "error-expired-token.json", &len);

    (void)state;
    assert_status(azure_parse_vms(d, len, SUB, NULL, &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "ExpiredAuthenticationToken"));
    free(d);
    d = unit_fixture("azure", "token-expired-secret.json", &len);
    azure_error_message(d, len, err, sizeof err);
    assert_true(strncmp(err, "invalid_client: AADSTS7000222", 29) == 0);
    free(d);
    assert_status(azure_parse_vms("{\"value\":{}}", 12, SUB, NULL, &p, err, sizeof err),
                  GI_INVALID);
    assert_status(azure_parse_vms("nope", 4, SUB, NULL, &p, err, sizeof err), GI_INVALID);
    /* A nextLink that does not fit fails the page. */
    assert_status(
        azure_parse_skus("{\"value\":[],\"nextLink\":\"https://example.com/a/very/long\"}", 57, &s,
                         next, 16, err, sizeof err),
        GI_INVALID);
    azure_skus_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(skus),       cmocka_unit_test(page_one),   cmocka_unit_test(page_two),
        cmocka_unit_test(a10_shares), cmocka_unit_test(odd_values), cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
