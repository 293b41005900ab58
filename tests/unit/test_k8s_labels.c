/* The Kubernetes node parser's copy of a node's labels (for ownership
 * rules on node labels): text labels kept as a compact JSON object,
 * bounded in size, what does not fit or is not text left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit.h"

#include "core/status.h"
#include "parse/k8s.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a one-node list whose metadata.labels is `labels` (JSON text). */
static json_t *labels_of(const char *labels)
{
    struct k8s_node_list l = {0};
    char err[K8S_ERR_LEN], *doc;
    size_t cap = strlen(labels) + 256;
    json_t *out;

    doc = malloc(cap);
    assert_non_null(doc);
    snprintf(doc, cap,
             "{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"n1\",\"labels\":%s},"
             "\"spec\":{},\"status\":{}}]}",
             labels);
    assert_int_equal(k8s_parse_node_list(doc, strlen(doc), &l, err, sizeof err), GI_OK);
    assert_int_equal(l.nitems, 1);
    out = json_loads(l.items[0].labels_json, 0, NULL);
    assert_non_null(out);
    k8s_node_list_free(&l);
    free(doc);
    return out;
}

static void test_labels_kept(void **state)
{
    json_t *o;
    (void)state;
    o = labels_of("{\"pool\":\"fast\",\"kubernetes.io/hostname\":\"n1\",\"team\":\"vision\"}");
    assert_int_equal(json_object_size(o), 3);
    assert_string_equal(json_string_value(json_object_get(o, "pool")), "fast");
    assert_string_equal(json_string_value(json_object_get(o, "team")), "vision");
    json_decref(o);
    o = labels_of("{}");
    assert_int_equal(json_object_size(o), 0);
    json_decref(o);
}

static void test_labels_bounded(void **state)
{
    char *big = malloc(200000), value[64];
    size_t len = 0;
    json_t *o;
    (void)state;

    assert_non_null(big);
    memset(value, 'v', 60);
    value[60] = '\0';
    len += (size_t)snprintf(big + len, 200000 - len, "{\"keep\":\"yes\"");
    for (int i = 0; i < 500; i++)
        len += (size_t)snprintf(big + len, 200000 - len, ",\"label-%03d\":\"%s\"", i, value);
    snprintf(big + len, 200000 - len, "}");
    o = labels_of(big);
    assert_true(json_object_size(o) > 10);
    assert_true(json_object_size(o) < 501);
    {
        char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        assert_true(strlen(text) < K8S_LABELS_LEN);
        free(text);
    }
    json_decref(o);
    free(big);
    /* A value too long for a label is left out, the others kept. */
    memset(big = malloc(400), 'x', 399);
    big[399] = '\0';
    {
        char doc[600];
        snprintf(doc, sizeof doc, "{\"long\":\"%.300s\",\"short\":\"s\"}", big);
        o = labels_of(doc);
    }
    assert_null(json_object_get(o, "long"));
    assert_string_equal(json_string_value(json_object_get(o, "short")), "s");
    json_decref(o);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels_kept),
        cmocka_unit_test(test_labels_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
