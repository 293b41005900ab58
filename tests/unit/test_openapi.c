/* Unit tests for the API description (src/api/openapi.json, embedded into
 * the binary): it describes exactly the routes of the route table
 * (src/http/routes.c) with the role each needs, and every reference in it
 * resolves.
 *
 * Paths are compared segment by segment. Literal segments must be equal; a
 * route's "{id}" or "{key}" segment matches any "{name}" segment of the
 * document (the document names parameters for people: {id}, {uuid}), and
 * the document must declare that name as a path parameter: an integer for
 * "{id}", a string for "{key}", and a string marked x-gpuinv-rest-of-path
 * for a final "{key*}" (which takes the rest of the path, '/' included). */
#include "unit.h"

#include "http/routes.h"
#include "store/embedded.h"

#include <jansson.h>
#include <string.h>

static const char *const methods[] = {"get",     "put",  "post",  "delete", "patch",
                                      "options", "head", "trace", NULL};

/* Failures are gathered so that one run names every missing route. */
struct problems {
    char text[8192];
    size_t len;
    int n;
};

static void problem(struct problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(struct problems *p, const char *fmt, ...)
{
    va_list ap;
    int w;

    p->n++;
    if (p->len + 2 >= sizeof p->text)
        return;
    va_start(ap, fmt);
    w = vsnprintf(p->text + p->len, sizeof p->text - p->len - 1, fmt, ap);
    va_end(ap);
    if (w > 0)
        p->len += (size_t)w < sizeof p->text - p->len - 1 ? (size_t)w : sizeof p->text - p->len - 2;
    p->text[p->len++] = '\n';
    p->text[p->len] = '\0';
}

static void fail_if_any(const struct problems *p)
{
    if (p->n > 0)
        fail_msg("%d problem(s) with src/api/openapi.json:\n%s", p->n, p->text);
}

/* The embedded document, parsed; caller decrefs. */
static json_t *load_doc(void)
{
    json_error_t err;

    for (const struct gi_embedded *e = gi_api_docs; e->name; e++) {
        if (strcmp(e->name, "openapi.json") == 0) {
            json_t *doc = json_loadb((const char *)e->data, e->len, JSON_REJECT_DUPLICATES, &err);
            if (doc == NULL)
                fail_msg("src/api/openapi.json line %d: %s", err.line, err.text);
            return doc;
        }
    }
    fail_msg("openapi.json is not embedded");
    return NULL;
}

static bool templated(const char *seg, size_t len)
{
    return len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
}

/* True when route pattern `route` and document path `doc` have the same
 * shape (see the top of the file). */
static bool same_shape(const char *route, const char *doc)
{
    const char *a = route, *b = doc;

    for (;;) {
        size_t al = strcspn(a, "/"), bl = strcspn(b, "/");
        bool at = templated(a, al), bt = templated(b, bl);
        if (at != bt || (!at && (al != bl || strncmp(a, b, al) != 0)))
            return false;
        a += al;
        b += bl;
        if (*a != *b)
            return false;
        if (*a == '\0')
            return true;
        a++;
        b++;
    }
}

/* The document path with the same shape as a route pattern, or NULL. */
static const char *doc_path_for(json_t *paths, const char *pattern)
{
    const char *key;
    json_t *v;

    json_object_foreach(paths, key, v) {
        if (same_shape(pattern, key))
            return key;
    }
    return NULL;
}

static void lower(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] + 32 : in[i]);
    out[i] = '\0';
}

/* Resolves a local reference ("#/components/..."), or NULL. Borrowed. */
static json_t *resolve(json_t *doc, const char *ref)
{
    json_t *at = doc;
    char tok[256];

    if (strncmp(ref, "#/", 2) != 0)
        return NULL;
    for (const char *p = ref + 2; at && *p;) {
        size_t n = strcspn(p, "/"), j = 0;
        for (size_t i = 0; i < n && j + 1 < sizeof tok; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                tok[j++] = p[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                tok[j++] = p[i];
            }
        }
        tok[j] = '\0';
        at = json_object_get(at, tok);
        p += n;
        if (*p == '/')
            p++;
    }
    return at;
}

/* The declared path parameter `name` of an operation (or its path item),
 * with references followed; NULL when not declared. */
static json_t *path_param(json_t *doc, json_t *item, json_t *opn, const char *name)
{
    json_t *lists[2] = {json_object_get(opn, "parameters"), json_object_get(item, "parameters")};

    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *p;
        json_array_foreach(lists[l], i, p) {
            const char *ref = json_string_value(json_object_get(p, "$ref"));
            if (ref)
                p = resolve(doc, ref);
            const char *in = p ? json_string_value(json_object_get(p, "in")) : NULL;
            const char *pn = p ? json_string_value(json_object_get(p, "name")) : NULL;
            if (in && pn && strcmp(in, "path") == 0 && strcmp(pn, name) == 0)
                return p;
        }
    }
    return NULL;
}

/* Checks that each templated segment of a route is a declared path
 * parameter of the right type in the document. */
static void check_params(struct problems *pr, json_t *doc, const struct route *rt,
                         const char *dpath, json_t *item, json_t *opn)
{
    const char *a = rt->pattern, *b = dpath;

    while (*a && *b) {
        size_t al = strcspn(a, "/"), bl = strcspn(b, "/");
        if (templated(a, al) && templated(b, bl)) {
            char name[64];
            json_t *p, *type;
            const char *want = strncmp(a, "{id}", 4) == 0 ? "integer" : "string";
            snprintf(name, sizeof name, "%.*s", (int)(bl - 2), b + 1);
            p = path_param(doc, item, opn, name);
            type = json_object_get(json_object_get(p, "schema"), "type");
            if (p == NULL)
                problem(pr, "%s %s: path parameter {%s} is not declared", rt->method, dpath, name);
            else if (!json_equal(json_object_get(p, "required"), json_true()))
                problem(pr, "%s %s: path parameter {%s} must be required", rt->method, dpath, name);
            else if (!json_is_string(type) || strcmp(json_string_value(type), want) != 0)
                problem(pr, "%s %s: path parameter {%s} must be of type %s (the route has %.*s)",
                        rt->method, dpath, name, want, (int)al, a);
            else if ((al == 6 && strncmp(a, "{key*}", 6) == 0) !=
                     json_is_true(json_object_get(p, "x-gpuinv-rest-of-path")))
                problem(pr,
                        "%s %s: path parameter {%s} takes the rest of the path exactly when the "
                        "route has {key*} (x-gpuinv-rest-of-path)",
                        rt->method, dpath, name);
        }
        a += al;
        b += bl;
        if (*a == '/')
            a++;
        if (*b == '/')
            b++;
    }
}

/* Checks that an operation documents the errors the dispatcher and the
 * request helpers give every route of its kind: 401 and 403 behind
 * credentials, 404 for a record named in the path, 400/413/415 for a body. */
static void check_errors(struct problems *pr, const struct route *rt, const char *dpath,
                         json_t *opn)
{
    json_t *resp = json_object_get(opn, "responses");
    const char *need[8];
    size_t n = 0;

    if (rt->need != GI_ROLE_NONE) {
        need[n++] = "401";
        need[n++] = "403";
    }
    if (strchr(rt->pattern, '{'))
        need[n++] = "404";
    if (json_object_get(opn, "requestBody")) {
        need[n++] = "400";
        need[n++] = "413";
        need[n++] = "415";
    }
    for (size_t i = 0; i < n; i++)
        if (json_object_get(resp, need[i]) == NULL)
            problem(pr, "%s %s must document the %s reply", rt->method, dpath, need[i]);
}

/* Every route of the table is in the document, with its role. */
static void test_every_route_is_documented(void **state)
{
    json_t *doc = load_doc(), *paths = json_object_get(doc, "paths");
    struct problems pr = {.len = 0};

    (void)state;
    assert_true(json_is_object(paths));
    for (const struct route *rt = gi_routes; rt->method; rt++) {
        const char *dpath = doc_path_for(paths, rt->pattern);
        char m[16];
        json_t *item, *opn, *role, *sec;
        const char *want = rt->need == GI_ROLE_NONE ? "none" : gi_role_name(rt->need);

        if (dpath == NULL) {
            problem(&pr, "%s %s is in the route table but its path is not in the document",
                    rt->method, rt->pattern);
            continue;
        }
        lower(rt->method, m, sizeof m);
        item = json_object_get(paths, dpath);
        if ((opn = json_object_get(item, m)) == NULL) {
            problem(&pr, "%s %s is in the route table but not in the document (path %s has no %s)",
                    rt->method, rt->pattern, dpath, m);
            continue;
        }
        role = json_object_get(opn, "x-gpuinv-role");
        if (!json_is_string(role) || strcmp(json_string_value(role), want) != 0)
            problem(&pr, "%s %s: x-gpuinv-role must be \"%s\" as in the route table", rt->method,
                    dpath, want);
        sec = json_object_get(opn, "security");
        if (rt->need == GI_ROLE_NONE && !(json_is_array(sec) && json_array_size(sec) == 0))
            problem(&pr, "%s %s needs no credentials: it must say \"security\": []", rt->method,
                    dpath);
        if (rt->need != GI_ROLE_NONE && sec != NULL)
            problem(&pr, "%s %s needs credentials: it must not override \"security\"", rt->method,
                    dpath);
        if (!json_is_object(json_object_get(opn, "responses")))
            problem(&pr, "%s %s has no responses", rt->method, dpath);
        check_errors(&pr, rt, dpath, opn);
        check_params(&pr, doc, rt, dpath, item, opn);
    }
    json_decref(doc);
    fail_if_any(&pr);
}

/* Every operation of the document is a route of the table. */
static void test_every_documented_operation_exists(void **state)
{
    json_t *doc = load_doc(), *paths = json_object_get(doc, "paths"), *item;
    struct problems pr = {.len = 0};
    const char *dpath;

    (void)state;
    json_object_foreach(paths, dpath, item) {
        for (const char *const *m = methods; *m; m++) {
            bool found = false;
            if (json_object_get(item, *m) == NULL)
                continue;
            for (const struct route *rt = gi_routes; rt->method && !found; rt++) {
                char lm[16];
                lower(rt->method, lm, sizeof lm);
                found = strcmp(lm, *m) == 0 && same_shape(rt->pattern, dpath);
            }
            if (!found) {
                char um[16];
                size_t i = 0;
                for (; (*m)[i] && i + 1 < sizeof um; i++)
                    um[i] = (char)((*m)[i] - 32);
                um[i] = '\0';
                problem(&pr, "%s %s is in the document but not in the route table", um, dpath);
            }
        }
    }
    json_decref(doc);
    fail_if_any(&pr);
}

/* Collects every "$ref" that does not resolve, and duplicate operationIds. */
static void walk(struct problems *pr, json_t *doc, json_t *v, json_t *ids)
{
    const char *key;
    json_t *child;
    size_t i;

    if (json_is_array(v)) {
        json_array_foreach(v, i, child)
            walk(pr, doc, child, ids);
        return;
    }
    if (!json_is_object(v))
        return;
    json_object_foreach(v, key, child) {
        if (strcmp(key, "$ref") == 0 && json_is_string(child) &&
            resolve(doc, json_string_value(child)) == NULL)
            problem(pr, "$ref %s does not resolve", json_string_value(child));
        else
            walk(pr, doc, child, ids);
    }
    child = json_object_get(v, "operationId");
    if (json_is_string(child) && json_object_get(v, "responses")) {
        if (json_object_get(ids, json_string_value(child)))
            problem(pr, "operationId %s is used twice", json_string_value(child));
        json_object_set(ids, json_string_value(child), json_true());
    }
}

static void test_references_resolve(void **state)
{
    json_t *doc = load_doc(), *ids = json_object();
    struct problems pr = {.len = 0};

    (void)state;
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    assert_true(json_is_object(json_object_get(doc, "info")));
    walk(&pr, doc, doc, ids);
    json_decref(ids);
    json_decref(doc);
    fail_if_any(&pr);
}

/* The checks themselves: shapes match as the file's header says. */
static void test_shape_rule(void **state)
{
    (void)state;
    assert_true(same_shape("/api/v1/gpus/{key}", "/api/v1/gpus/{uuid}"));
    assert_true(same_shape("/api/v1/sources/{id}/run", "/api/v1/sources/{id}/run"));
    assert_false(same_shape("/api/v1/gpus/{key}", "/api/v1/gpus/import"));
    assert_false(same_shape("/api/v1/sources/{id}", "/api/v1/sources/{id}/run"));
    assert_false(same_shape("/api/v1/sources", "/api/v1/source"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_rule),
        cmocka_unit_test(test_every_route_is_documented),
        cmocka_unit_test(test_every_documented_operation_exists),
        cmocka_unit_test(test_references_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
