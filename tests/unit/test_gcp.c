/* GCP Compute Engine answers (tests/fixtures/gcp) into cloud instance
 * records: aggregatedList pages with per-zone warnings and page tokens,
 * guestAccelerators, GPUs from accelerator-optimized machine types,
 * labels, status, zone → region, timestamps with local offsets, values of
 * the wrong type; and the RS256 service-account token, verified with the
 * public half of a key made for the test. */
#include "unit.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sodium.h>
#include <string.h>

#include "core/jwt.h"
#include "parse/gcp.h"

static struct gcp_page load(const char *name)
{
    struct gcp_page p;
    char err[GCP_ERR_LEN];
    size_t len;
    char *d = unit_fixture("gcp", name, &len);

    if (gcp_parse_instances(d, len, "ml-prod", &p, err, sizeof err) != GI_OK)
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

static void page_one(void **state)
{
    struct gcp_page p = load("instances-page1.json");
    const struct cloud_instance *a = &p.items[0], *b = &p.items[1];

    (void)state;
    assert_int_equal(p.n, 2); /* the empty zone's warning adds nothing */
    assert_string_equal(p.next, "Cg1wYWdlLXR3by10b2tlbg");
    assert_int_equal(p.unreachable, 0);
    assert_int_equal(p.warnings, 0);
    assert_string_equal(a->provider, "gcp");
    assert_string_equal(a->instance_id, "4583243601304432596");
    assert_string_equal(a->name, "trainer-0");
    assert_string_equal(a->account, "ml-prod");
    assert_string_equal(a->zone, "us-central1-a");
    assert_string_equal(a->region, "us-central1");
    assert_string_equal(a->machine_type, "a3-highgpu-8g");
    assert_int_equal(a->state, CLOUD_RUNNING);
    assert_string_equal(a->state_raw, "RUNNING");
    /* lastStartTimestamp 2025-07-17T01:02:03-07:00 = 08:02:03Z */
    assert_int_equal(a->launch_time, 1752739323);
    assert_string_equal(a->gpu_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(a->gpu_count, 8);
    assert_int_equal(a->gpu_memory_mib, 81920);
    assert_string_equal(a->private_ip, "10.128.0.12");
    assert_int_equal(a->ntags, 2);
    assert_string_equal(tag(a, "team"), "llm");
    /* No guestAccelerators: the machine type's GPUs; no labels. */
    assert_string_equal(b->machine_type, "g2-standard-24");
    assert_string_equal(b->gpu_model, "NVIDIA L4");
    assert_int_equal(b->gpu_count, 2);
    assert_int_equal(b->ntags, 0);
    /* creationTimestamp 2025-09-01T08:00:00.000-07:00 = 15:00:00Z */
    assert_int_equal(b->launch_time, 1756738800);
    gcp_page_free(&p);
}

static void page_two(void **state)
{
    struct gcp_page p = load("instances-page2.json");

    (void)state;
    assert_int_equal(p.n, 4);
    assert_string_equal(p.next, "");
    /* TERMINATED is a stopped VM that still exists; -vws is a T4. */
    assert_int_equal(p.items[0].state, CLOUD_STOPPED);
    assert_string_equal(p.items[0].state_raw, "TERMINATED");
    assert_string_equal(p.items[0].gpu_model, "Tesla T4");
    assert_int_equal(p.items[0].gpu_count, 2);
    assert_string_equal(p.items[0].region, "us-east1");
    assert_string_equal(tag(&p.items[0], "team"), "vision");
    /* A GPU family's type the table lacks: unknown, for machineTypes.get. */
    assert_string_equal(p.items[1].machine_type, "a4-highgpu-8g");
    assert_int_equal(p.items[1].gpu_count, -1);
    assert_int_equal(p.items[1].state, CLOUD_PENDING);
    assert_int_equal(p.items[2].gpu_count, -1);
    /* A type of a family without GPUs has none. */
    assert_int_equal(p.items[3].gpu_count, 0);
    assert_string_equal(p.items[3].gpu_model, "");
    gcp_page_free(&p);
}

static void odd_values(void **state)
{
    struct gcp_page p = load("instances-odd.json");

    (void)state;
    /* The instance with neither id nor name is left out; a string
     * instead of an object is skipped; the rest keep what they have. */
    assert_int_equal(p.n, 3);
    assert_true(p.warnings >= 5);
    assert_int_equal(p.unreachable, 2);
    assert_false(p.unreachable_more);
    assert_string_equal(p.unreachable_scopes[0], "zones/us-west1-a");
    assert_string_equal(p.unreachable_scopes[1], "zones/us-west1-c");
    assert_string_equal(p.items[0].instance_id, "99");
    assert_int_equal(p.items[0].state, CLOUD_STOPPED);
    assert_int_equal(p.items[0].launch_time, 0);
    assert_string_equal(p.items[0].machine_type, "");
    assert_int_equal(p.items[0].gpu_count, -1);
    assert_int_equal(p.items[0].ntags, 1); /* the number label is left out */
    assert_string_equal(p.items[1].instance_id, "no-id");
    assert_int_equal(p.items[1].state, CLOUD_UNKNOWN);
    assert_string_equal(p.items[1].state_raw, "REPAIRING");
    assert_string_equal(p.items[1].gpu_model, "Tesla V100-SXM2-16GB");
    assert_int_equal(p.items[1].gpu_count, -1);
    /* TPU slices are not GPUs. */
    assert_string_equal(p.items[2].name, "tpu-host");
    assert_int_equal(p.items[2].gpu_count, 0);
    assert_int_equal(p.items[2].ntags, 0);
    assert_int_equal(p.items[2].state, CLOUD_PENDING);
    gcp_page_free(&p);
}

static void bad_pages(void **state)
{
    struct gcp_page p;
    char err[GCP_ERR_LEN], big[GCP_TOKEN_MAX + 64];
    size_t len;
    char *d = unit_fixture("gcp", "error-401.json", &len);

    (void)state;
    assert_status(gcp_parse_instances(d, len, "p", &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "UNAUTHENTICATED"));
    gcp_error_message(d, len, err, sizeof err);
    assert_true(strncmp(err, "UNAUTHENTICATED: Request had invalid", 36) == 0);
    free(d);
    assert_status(gcp_parse_instances("[1]", 3, "p", &p, err, sizeof err), GI_INVALID);
    assert_status(gcp_parse_instances("{\"items\":[1]}", 13, "p", &p, err, sizeof err), GI_INVALID);
    assert_status(gcp_parse_instances("{\"items\":", 9, "p", &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "not JSON"));
    /* A page token that does not fit fails the page, never cut. */
    memcpy(big, "{\"nextPageToken\":\"", 18);
    memset(big + 18, 'a', GCP_TOKEN_MAX);
    memcpy(big + 18 + GCP_TOKEN_MAX, "\"}", 3);
    assert_status(gcp_parse_instances(big, strlen(big), "p", &p, err, sizeof err), GI_INVALID);
    /* Entra-style OAuth errors read the same way. */
    d = unit_fixture("gcp", "token-invalid-grant.json", &len);
    gcp_error_message(d, len, err, sizeof err);
    assert_string_equal(err, "invalid_grant: Invalid JWT Signature.");
    free(d);
}

static void machine_types(void **state)
{
    char model[128], err[8];
    int64_t mem;
    int count;
    size_t len;
    char *d = unit_fixture("gcp", "machine-type-a4-highgpu-8g.json", &len);

    (void)state;
    (void)err;
    assert_status(gcp_parse_machine_type(d, len, &count, model, sizeof model, &mem), GI_OK);
    assert_int_equal(count, 8);
    assert_string_equal(model, "NVIDIA B200");
    free(d);
    assert_int_equal(gcp_machine_gpus("a2-megagpu-16g", model, sizeof model, &mem), 16);
    assert_string_equal(model, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(gcp_machine_gpus("a2-ultragpu-4g", model, sizeof model, &mem), 4);
    assert_int_equal(mem, 81920);
    assert_int_equal(gcp_machine_gpus("a3-ultragpu-8g", model, sizeof model, &mem), 8);
    assert_string_equal(model, "NVIDIA H200");
    assert_int_equal(gcp_machine_gpus("n1-standard-8", model, sizeof model, &mem), 0);
    assert_int_equal(gcp_machine_gpus("a3-edgegpu-8g", model, sizeof model, &mem), -1);
    /* An unknown NVIDIA accelerator keeps its own name. */
    assert_true(gcp_accelerator_model("nvidia-rtx-pro-6000", model, sizeof model, &mem));
    assert_string_equal(model, "nvidia-rtx-pro-6000");
    assert_int_equal(mem, -1);
    assert_false(gcp_accelerator_model("tpu-v5p-slice", model, sizeof model, &mem));
    assert_status(gcp_parse_machine_type("{\"error\":{}}", 12, &count, model, sizeof model, &mem),
                  GI_INVALID);
    assert_status(
        gcp_parse_machine_type("{\"accelerators\":[{\"guestAcceleratorType\":\"nvidia-l4\","
                               "\"guestAcceleratorCount\":-1}]}",
                               71, &count, model, sizeof model, &mem),
        GI_INVALID);
}

/* Splits a compact JWS into its three parts, decoding the first two. */
static void jws_parts(const char *jws, json_t **h, json_t **c, unsigned char *sig, size_t *siglen,
                      size_t *signed_len)
{
    const char *d1 = strchr(jws, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    unsigned char buf[4096];
    size_t n;

    assert_non_null(d2);
    assert_int_equal(sodium_base642bin(buf, sizeof buf, jws, (size_t)(d1 - jws), NULL, &n, NULL,
                                       sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                     0);
    *h = json_loadb((const char *)buf, n, 0, NULL);
    assert_int_equal(sodium_base642bin(buf, sizeof buf, d1 + 1, (size_t)(d2 - d1 - 1), NULL, &n,
                                       NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                     0);
    *c = json_loadb((const char *)buf, n, 0, NULL);
    assert_int_equal(sodium_base642bin(sig, 1024, d2 + 1, strlen(d2 + 1), NULL, siglen, NULL,
                                       sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                     0);
    *signed_len = (size_t)(d2 - jws);
}

static void jwt_rs256(void **state)
{
    gnutls_x509_privkey_t xk;
    gnutls_privkey_t pk;
    gnutls_pubkey_t pub;
    gnutls_datum_t pem = {NULL, 0}, data, sd;
    json_t *hdr = json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "kid", "k1");
    json_t *claims = json_pack("{s:s, s:I}", "iss", "sa@p.iam.gserviceaccount.com", "exp",
                               (json_int_t)1900000000);
    json_t *h = NULL, *c = NULL;
    unsigned char sig[1024];
    size_t siglen, signed_len;
    char *jws = NULL, *pemz, err[256];

    (void)state;
    assert_int_equal(gnutls_x509_privkey_init(&xk), 0);
    assert_int_equal(gnutls_x509_privkey_generate(xk, GNUTLS_PK_RSA, 2048, 0), 0);
    assert_int_equal(
        gnutls_x509_privkey_export2_pkcs8(xk, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &pem),
        0);
    pemz = calloc(1, pem.size + 1);
    memcpy(pemz, pem.data, pem.size);
    assert_int_equal(jwt_sign_rs256(pemz, hdr, claims, &jws, err, sizeof err), 0);
    jws_parts(jws, &h, &c, sig, &siglen, &signed_len);
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
    assert_string_equal(json_string_value(json_object_get(c, "iss")),
                        "sa@p.iam.gserviceaccount.com");
    assert_int_equal(siglen, 256);
    /* The signature verifies with the public half. */
    assert_int_equal(gnutls_privkey_init(&pk), 0);
    assert_int_equal(gnutls_privkey_import_x509(pk, xk, 0), 0);
    assert_int_equal(gnutls_pubkey_init(&pub), 0);
    assert_int_equal(gnutls_pubkey_import_privkey(pub, pk, 0, 0), 0);
    data.data = (unsigned char *)jws;
    data.size = (unsigned)signed_len;
    sd.data = sig;
    sd.size = (unsigned)siglen;
    assert_true(gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sd) >= 0);
    /* A changed claim no longer verifies. */
    jws[signed_len - 2] ^= 1;
    assert_true(gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sd) < 0);
    free(jws);
    /* A key that is not PEM is refused with a reason. */
    assert_int_equal(
        jwt_sign_rs256("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", hdr,
                       claims, &jws, err, sizeof err),
        -1);
    assert_null(jws);
    assert_non_null(strstr(err, "private key"));
    gnutls_pubkey_deinit(pub);
    gnutls_privkey_deinit(pk);
    gnutls_x509_privkey_deinit(xk);
    gnutls_free(pem.data);
    free(pemz);
    json_decref(hdr);
    json_decref(claims);
    json_decref(h);
    json_decref(c);
}

/* True when the page names scope among its unreachable scopes. */
static bool names_scope(const struct gcp_page *p, const char *scope)
{
    for (size_t i = 0; i < p->unreachable; i++)
        if (strcmp(p->unreachable_scopes[i], scope) == 0)
            return true;
    return false;
}

static void partial_listing(void **state)
{
    struct gcp_page p = load("instances-partial.json");
    char body[8192], err[GCP_ERR_LEN];
    size_t used;

    (void)state;
    /* The reachable zone's instance is listed; the empty zone's
     * NO_RESULTS_ON_PAGE is fine; an UNREACHABLE warning, a warning
     * without a code and "unreachables" name the zones not seen, each
     * once. */
    assert_int_equal(p.n, 1);
    assert_string_equal(p.items[0].name, "trainer-0");
    assert_int_equal(p.unreachable, 3);
    assert_false(p.unreachable_more);
    assert_true(names_scope(&p, "zones/asia-east2-c"));
    assert_true(names_scope(&p, "zones/us-west4-b"));
    assert_true(names_scope(&p, "zones/me-west1-a"));
    assert_false(names_scope(&p, "zones/europe-west4-b"));
    assert_false(names_scope(&p, "zones/us-central1-a"));
    gcp_page_free(&p);

    /* More zones than can be named: the page says so. */
    used = (size_t)snprintf(body, sizeof body, "{\"unreachables\": [");
    for (int i = 0; i < GCP_UNREACHABLE_MAX + 1; i++)
        used +=
            (size_t)snprintf(body + used, sizeof body - used, "%s\"zones/z-%d\"", i ? ", " : "", i);
    snprintf(body + used, sizeof body - used, "]}");
    assert_int_equal(gcp_parse_instances(body, strlen(body), "p", &p, err, sizeof err), GI_OK);
    assert_int_equal(p.unreachable, GCP_UNREACHABLE_MAX);
    assert_true(p.unreachable_more);
    gcp_page_free(&p);
    /* A scope that is not text cannot be named either. */
    snprintf(body, sizeof body, "{\"items\": {}, \"unreachables\": [7]}");
    assert_int_equal(gcp_parse_instances(body, strlen(body), "p", &p, err, sizeof err), GI_OK);
    assert_true(p.unreachable_more);
    gcp_page_free(&p);
    /* unreachables that is not a list fails the page. */
    snprintf(body, sizeof body, "{\"unreachables\": \"zones/a\"}");
    assert_int_equal(gcp_parse_instances(body, strlen(body), "p", &p, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "unreachables"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(page_one),        cmocka_unit_test(page_two),
        cmocka_unit_test(odd_values),      cmocka_unit_test(bad_pages),
        cmocka_unit_test(machine_types),   cmocka_unit_test(jwt_rs256),
        cmocka_unit_test(partial_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
