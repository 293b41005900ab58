/* habanalabs_* exporter samples to observations: a recorded Gaudi2 node
 * in Kubernetes, a bare-metal Gaudi3, and the exporter's edge cases
 * (0 for a failed read, UUID "na", no device series at all, the
 * accelerator_* aliases with wrong units). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/hlexport.h"
#include "parse/promtext.h"

#define NUM(a, b) assert_float_equal((a), (b), 1e-6)
#define ABSENT(x) assert_true(isnan(x))

static int scrape(const char *name, const char *host, struct gi_obs_set *s, size_t *skipped)
{
    struct prom_error pe = {0};
    struct hlexp h;
    size_t len;
    char *d = unit_fixture("gaudi", name, &len);
    int rc;

    hlexp_begin(&h, s);
    h.hostname = host;
    rc = prom_parse_text(d, len, hlexp_sample, &h, &pe);
    free(d);
    if (rc == GI_OK)
        rc = hlexp_finish(&h);
    if (skipped)
        *skipped = h.skipped;
    hlexp_free(&h);
    return rc;
}

static const struct gi_gpu_obs *find(const struct gi_obs_set *s, const char *uuid)
{
    for (size_t i = 0; i < s->ngpus; i++)
        if (strcmp(s->gpus[i].uuid, uuid) == 0)
            return &s->gpus[i];
    fail_msg("no device %s", uuid);
    return NULL;
}

static void gaudi2_k8s(void **state)
{
    struct gi_obs_set s = {0};
    const struct gi_gpu_obs *g;
    size_t skipped = 0;

    (void)state;
    assert_int_equal(scrape("exporter_gaudi2.prom", NULL, &s, &skipped), GI_OK);
    assert_int_equal(s.ngpus, 3);
    assert_int_equal(skipped, 1); /* UUID "na" and no serial */
    g = find(&s, "01P0-HL2080A0-15-TG1C07-11-06-02");
    assert_int_equal(g->vendor, GI_VENDOR_INTEL);
    assert_string_equal(g->name, "Intel Gaudi2");
    assert_string_equal(g->serial, "AM50017388");
    assert_string_equal(g->hostname, "gaudi-node-07"); /* from habanalabs_kube_info */
    assert_string_equal(g->driver, "1.17.0-28a11ca");
    assert_string_equal(g->vbios, "U-Boot 2021.04-hl-gaudi2-1.17.0-fw-51.2.0-sec-9");
    assert_int_equal(g->index, 1);
    NUM(g->util_gpu_pct, 96);
    NUM(g->memory_used_mib, 81152);
    NUM(g->memory_total_mib, 98304);
    NUM(g->power_w, 431); /* mW, not the accelerator_ alias */
    NUM(g->power_limit_w, 600);
    NUM(g->temp_c, 45);
    assert_int_equal(g->remap_corrected, 2);
    assert_int_equal(g->remap_uncorrectable, 1);
    assert_int_equal(g->remap_pending, 1);
    assert_int_equal(g->remap_failure, -1); /* the exporter does not say */
    assert_string_equal(g->pod, "llm-train-7d9c5-0");
    assert_string_equal(g->namespace_, "team-nlp");
    assert_int_equal(s.npods, 1);
    assert_string_equal(s.pods[0].gpu_uuid, g->uuid);

    g = find(&s, "01P0-HL2080A0-15-TG1C07-05-01-04");
    NUM(g->util_gpu_pct, 0); /* idle is 0 */
    NUM(g->memory_used_mib, 768);
    assert_string_equal(g->pod, "");

    /* UUID "na": named by its serial; its zeros are failed reads. */
    g = find(&s, "HL-SN-AM50017391");
    assert_string_equal(g->name, "");
    NUM(g->util_gpu_pct, 12);
    NUM(g->memory_used_mib, 98304 - 97536); /* total − free, used read 0 */
    ABSENT(g->power_w);
    NUM(g->temp_c, 31); /* on-chip read 0: the on-board sensor */
    gi_obs_free(&s);
}

static void baremetal_and_override(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    assert_int_equal(scrape("exporter_gaudi3_baremetal.prom", NULL, &s, NULL), GI_OK);
    assert_int_equal(s.ngpus, 1);
    assert_string_equal(s.gpus[0].hostname, "");
    assert_string_equal(s.gpus[0].name, "Intel Gaudi3");
    ABSENT(s.gpus[0].memory_used_mib); /* NaN */
    NUM(s.gpus[0].power_w, 712);
    gi_obs_free(&s);
    assert_int_equal(scrape("exporter_gaudi2.prom", "rack4-node7", &s, NULL), GI_OK);
    assert_string_equal(s.gpus[0].hostname, "rack4-node7");
    gi_obs_free(&s);
}

/* HLML failed: only kube_info is left; nothing is reported. */
static void hlml_failed(void **state)
{
    struct gi_obs_set s = {0};

    (void)state;
    assert_int_equal(scrape("exporter_hlml_failed.prom", NULL, &s, NULL), GI_NOT_FOUND);
    assert_int_equal(s.ngpus, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gaudi2_k8s),
        cmocka_unit_test(baremetal_and_override),
        cmocka_unit_test(hlml_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
