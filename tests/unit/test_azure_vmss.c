/* Azure scale sets (tests/fixtures/azure/vmss-*.json): the scale-set list
 * (orchestration modes, tags, ids that cannot be read), the members of a
 * Uniform scale set (computer names, sizes from sku, GPUs from the SKU
 * list and the size table in any case, power states, tags inherited from
 * the scale set when a member has none), and computer names of ordinary
 * VMs. */
#include "unit.h"

#include <string.h>

#include "parse/azure.h"

#define SUB "00000000-1111-2222-3333-444444444444"

static char *fixture(const char *name, size_t *len) { return unit_fixture("azure", name, len); }

static const char *tag(const struct cloud_instance *ci, const char *key)
{
    for (size_t i = 0; i < ci->ntags; i++)
        if (strcmp(ci->tags[i].key, key) == 0)
            return ci->tags[i].value;
    return NULL;
}

static void load_sets(struct azure_scale_sets *sets)
{
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX];
    size_t len;
    char *d = fixture("vmss-list.json", &len);

    memset(sets, 0, sizeof *sets);
    if (azure_parse_scale_sets(d, len, sets, next, sizeof next, err, sizeof err) != GI_OK)
        fail_msg("vmss-list.json: %s", err);
    assert_string_equal(next, "");
    free(d);
}

static void scale_sets(void **state)
{
    struct azure_scale_sets sets;
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX];
    const char *odd =
        "{\"value\": [{\"id\": \"/subscriptions/s/resourceGroups/rg/providers/"
        "Microsoft.Compute/virtualMachineScaleSets/old-pool\", \"tags\": {}, \"properties\": {}},"
        " \"not an object\"],"
        " \"nextLink\": \"https://management.azure.com/next?$skiptoken=2\"}";

    (void)state;
    load_sets(&sets);
    assert_int_equal(sets.n, 2);
    assert_string_equal(sets.v[0].name, "aks-gpu-12345678-vmss");
    assert_false(sets.v[0].flexible);
    assert_non_null(strstr(sets.v[0].id, "/virtualMachineScaleSets/aks-gpu-12345678-vmss"));
    assert_string_equal(json_string_value(json_object_get(sets.v[0].tags, "team")), "aks-ml");
    assert_string_equal(sets.v[1].name, "flex-infer");
    assert_true(sets.v[1].flexible);
    azure_scale_sets_free(&sets);
    assert_int_equal(sets.n, 0);

    /* No orchestrationMode is Uniform; no name is the id's last segment;
     * empty tags are none; entries that are not objects are skipped. */
    assert_status(
        azure_parse_scale_sets(odd, strlen(odd), &sets, next, sizeof next, err, sizeof err), GI_OK);
    assert_int_equal(sets.n, 1);
    assert_string_equal(sets.v[0].name, "old-pool");
    assert_false(sets.v[0].flexible);
    assert_null(sets.v[0].tags);
    assert_string_equal(next, "https://management.azure.com/next?$skiptoken=2");
    azure_scale_sets_free(&sets);

    /* A scale set whose members cannot be asked for fails the page,
     * naming it: without them the listing would be incomplete. */
    {
        const char *bad[] = {
            "{\"value\": [{\"name\": \"no-id\"}]}",
            "{\"value\": [{\"name\": \"rel\", \"id\": \"virtualMachineScaleSets/rel\"}]}",
            "{\"value\": [{\"name\": \"dots\", \"id\": \"/subscriptions/s/../../x\"}]}",
            "{\"value\": [{\"name\": \"query\", \"id\": \"/subscriptions/s/x?y=1\"}]}",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            memset(&sets, 0, sizeof sets);
            assert_status(azure_parse_scale_sets(bad[i], strlen(bad[i]), &sets, next, sizeof next,
                                                 err, sizeof err),
                          GI_INVALID);
            assert_non_null(strstr(err, "scale set"));
            azure_scale_sets_free(&sets);
        }
        memset(&sets, 0, sizeof sets);
        const char *refused = "{\"error\": {\"code\": \"AuthorizationFailed\"}}";
        assert_status(azure_parse_scale_sets(refused, strlen(refused), &sets, next, sizeof next,
                                             err, sizeof err),
                      GI_INVALID);
        assert_non_null(strstr(err, "AuthorizationFailed"));
    }
}

static void members(void **state)
{
    struct azure_scale_sets sets;
    struct azure_skus skus = {0};
    struct azure_page p;
    char err[AZURE_ERR_LEN], next[AZURE_URL_MAX];
    size_t len;
    char *d;

    (void)state;
    load_sets(&sets);
    d = fixture("skus.json", &len);
    assert_status(azure_parse_skus(d, len, &skus, next, sizeof next, err, sizeof err), GI_OK);
    free(d);

    d = fixture("vmss-members-page1.json", &len);
    assert_status(azure_parse_vmss_vms(d, len, SUB, &skus, &sets.v[0], &p, err, sizeof err), GI_OK);
    free(d);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.warnings, 0);
    assert_string_equal(p.items[0].provider, "azure");
    assert_string_equal(p.items[0].name, "aks-gpu-12345678-vmss000000");
    assert_string_equal(p.items[0].instance_id, "0e5a1d2c-0000-4000-8000-00000000b000");
    assert_string_equal(p.items[0].account, SUB);
    assert_string_equal(p.items[0].machine_type, "Standard_NC24ads_A100_v4");
    assert_int_equal(p.items[0].gpu_count, 1);
    assert_string_equal(p.items[0].gpu_model, "NVIDIA A100 80GB PCIe");
    assert_int_equal(p.items[0].state, CLOUD_RUNNING);
    assert_string_equal(p.items[0].region, "eastus");
    assert_string_equal(p.items[0].zone, "1");
    /* No tags of its own: the scale set's. */
    assert_int_equal(p.items[0].ntags, 2);
    assert_string_equal(tag(&p.items[0], "team"), "aks-ml");
    assert_string_equal(tag(&p.items[0], "aks-managed-poolName"), "gpu");
    assert_non_null(strstr(p.next, "$skiptoken=bWVtYmVycy0y"));
    azure_page_free(&p);

    d = fixture("vmss-members-page2.json", &len);
    /* Without the SKU list the size table alone gives the count. */
    assert_status(azure_parse_vmss_vms(d, len, SUB, NULL, &sets.v[0], &p, err, sizeof err), GI_OK);
    free(d);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.items[0].name, "aks-gpu-12345678-vmss000001");
    assert_string_equal(p.items[0].machine_type, "standard_nc24ads_a100_v4");
    assert_int_equal(p.items[0].gpu_count, 1);
    assert_string_equal(p.items[0].gpu_model, "NVIDIA A100 80GB PCIe");
    assert_int_equal(p.items[0].state, CLOUD_STOPPED);
    assert_string_equal(p.items[0].state_raw, "deallocated");
    assert_int_equal(p.items[0].launch_time, 1746086592); /* 2025-05-01T08:03:12Z */
    /* Its own tags, not the scale set's. */
    assert_int_equal(p.items[0].ntags, 2);
    assert_string_equal(tag(&p.items[0], "pool"), "gpu-spot");
    assert_null(tag(&p.items[0], "aks-managed-poolName"));
    assert_string_equal(p.next, "");
    azure_page_free(&p);

    /* hardwareProfile.vmSize wins over the sku name; a member without
     * vmId is known by its name; a computerName of the wrong type is
     * noted and the resource name kept. */
    {
        const char *odd = "{\"value\": [{\"name\": \"pool_3\", \"sku\": {\"name\": \"Basic_A0\"},"
                          " \"properties\": {\"hardwareProfile\": {\"vmSize\":"
                          " \"Standard_NC4as_T4_v3\"}, \"osProfile\": {\"computerName\": 5}}}]}";
        assert_status(
            azure_parse_vmss_vms(odd, strlen(odd), SUB, &skus, &sets.v[1], &p, err, sizeof err),
            GI_OK);
        assert_int_equal(p.n, 1);
        assert_string_equal(p.items[0].name, "pool_3");
        assert_string_equal(p.items[0].instance_id, "pool_3");
        assert_string_equal(p.items[0].machine_type, "Standard_NC4as_T4_v3");
        assert_int_equal(p.items[0].gpu_count, 1);
        assert_int_equal(p.warnings, 1);
        assert_non_null(strstr(p.warning, "computerName"));
        assert_string_equal(tag(&p.items[0], "team"), "infer");
        azure_page_free(&p);
    }
    azure_skus_free(&skus);
    azure_scale_sets_free(&sets);
}

/* An ordinary VM is named by its computer name when it has one; the
 * sku name is not its size (only a member's). */
static void vm_computer_name(void **state)
{
    struct azure_page p;
    char err[AZURE_ERR_LEN];
    size_t len;
    char *d = fixture("vmss-flex-vm.json", &len), *body = malloc(len + 32);
    int n;

    (void)state;
    n = snprintf(body, len + 32, "{\"value\": [%.*s]}", (int)len, d);
    assert_status(azure_parse_vms(body, (size_t)n, SUB, NULL, &p, err, sizeof err), GI_OK);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.items[0].name, "flex-infer000001");
    assert_string_equal(p.items[0].instance_id, "0e5a1d2c-0000-4000-8000-00000000c001");
    assert_string_equal(p.items[0].gpu_model, "Tesla T4");
    assert_string_equal(tag(&p.items[0], "team"), "infer");
    azure_page_free(&p);
    {
        const char *vm =
            "{\"value\": [{\"name\": \"v\", \"sku\": {\"name\": \"Standard_NC4as_T4_v3\"}}]}";
        assert_status(azure_parse_vms(vm, strlen(vm), SUB, NULL, &p, err, sizeof err), GI_OK);
        assert_string_equal(p.items[0].machine_type, "");
        assert_int_equal(p.items[0].gpu_count, -1);
        azure_page_free(&p);
    }
    free(body);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scale_sets),
        cmocka_unit_test(members),
        cmocka_unit_test(vm_computer_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
