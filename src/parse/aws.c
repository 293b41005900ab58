/* AWS EC2 Query API answers; see aws.h. */
#include "parse/aws.h"
#include "core/status.h"
#include "core/util.h"

#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static bool named(const xmlNode *n, const char *name)
{
    return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* The first child element of n called name, or NULL. */
static xmlNode *child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

/* The first child element called a, else the first called b. */
static xmlNode *child_either(const xmlNode *n, const char *a, const char *b)
{
    xmlNode *c = child(n, a);
    return c ? c : child(n, b);
}

/* The text of element n, trimmed, into buf: 0 (buf "" when n is NULL or
 * empty), -1 when it does not fit or is not text. */
static int text(const xmlNode *n, char *buf, size_t cap)
{
    size_t o = 0, a = 0;

    buf[0] = '\0';
    if (n == NULL)
        return 0;
    for (xmlNode *c = n->children; c; c = c->next) {
        size_t len;
        if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) || !c->content)
            continue;
        len = strlen((const char *)c->content);
        if (o + len >= cap)
            return -1;
        memcpy(buf + o, c->content, len);
        o += len;
        buf[o] = '\0';
    }
    while (o > 0 &&
           (buf[o - 1] == ' ' || buf[o - 1] == '\n' || buf[o - 1] == '\r' || buf[o - 1] == '\t'))
        buf[--o] = '\0';
    while (buf[a] == ' ' || buf[a] == '\n' || buf[a] == '\r' || buf[a] == '\t')
        a++;
    if (a)
        memmove(buf, buf + a, o - a + 1);
    return gi_text_ok(buf) ? 0 : -1;
}

/* Reads a field: an unreadable value leaves it "" and counts a warning. */
static void field(const xmlNode *n, char *buf, size_t cap, size_t *warnings)
{
    if (text(n, buf, cap) != 0) {
        buf[0] = '\0';
        (*warnings)++;
    }
}

enum cloud_state aws_state(int64_t code)
{
    switch (code) {
    case 0:
        return CLOUD_PENDING;
    case 16:
        return CLOUD_RUNNING;
    case 32:
    case 64:
        return CLOUD_STOPPING;
    case 48:
        return CLOUD_TERMINATED;
    case 80:
        return CLOUD_STOPPED;
    default:
        return CLOUD_UNKNOWN;
    }
}

/* The state from its name, for an answer whose code is unreadable. */
static enum cloud_state state_by_name(const char *s)
{
    static const struct {
        const char *name;
        enum cloud_state st;
    } names[] = {{"pending", CLOUD_PENDING},        {"running", CLOUD_RUNNING},
                 {"shutting-down", CLOUD_STOPPING}, {"stopping", CLOUD_STOPPING},
                 {"terminated", CLOUD_TERMINATED},  {"stopped", CLOUD_STOPPED}};

    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].st;
    return CLOUD_UNKNOWN;
}

/* Parses the body as XML with no network, no entity expansion and
 * libxml2's default depth limit; the root element must be `root`. */
static xmlDoc *read_doc(const char *data, size_t len, const char *root, char *err, size_t errlen,
                        int *rc)
{
    xmlParserCtxt *ctxt;
    xmlDoc *doc;
    xmlNode *r;

    *rc = GI_INVALID;
    if (len > AWS_MAX_BODY) {
        fail(err, errlen, "the answer is larger than %u bytes", AWS_MAX_BODY);
        *rc = GI_TOO_LARGE;
        return NULL;
    }
    if (!(ctxt = xmlNewParserCtxt())) {
        fail(err, errlen, "cannot start the XML parser");
        *rc = GI_INTERNAL;
        return NULL;
    }
    doc = xmlCtxtReadMemory(ctxt, data, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOBLANKS);
    if (!doc) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        fail(err, errlen, "the answer is not XML (line %d)", e ? e->line : 0);
        xmlFreeParserCtxt(ctxt);
        return NULL;
    }
    xmlFreeParserCtxt(ctxt);
    r = xmlDocGetRootElement(doc);
    if (!named(r, root)) {
        char code[64] = "", msg[160] = "";
        if (named(r, "Response")) {
            xmlNode *e = child(child(r, "Errors"), "Error");
            if (text(child(e, "Code"), code, sizeof code) != 0)
                code[0] = '\0';
            if (text(child(e, "Message"), msg, sizeof msg) != 0)
                msg[0] = '\0';
            fail(err, errlen, "EC2 error %s: %s", code[0] ? code : "(no code)", msg);
        } else {
            fail(err, errlen, "root element is <%.40s>, not <%s>", r ? (const char *)r->name : "",
                 root);
        }
        xmlFreeDoc(doc);
        return NULL;
    }
    *rc = GI_OK;
    return doc;
}

bool aws_parse_error(const char *data, size_t len, char *code, size_t clen, char *msg, size_t mlen)
{
    xmlParserCtxt *ctxt;
    xmlDoc *doc;
    xmlNode *e;
    bool is = false;

    code[0] = '\0';
    msg[0] = '\0';
    if (len > AWS_MAX_BODY || !(ctxt = xmlNewParserCtxt()))
        return false;
    doc = xmlCtxtReadMemory(ctxt, data, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOBLANKS);
    xmlFreeParserCtxt(ctxt);
    if (!doc)
        return false;
    e = named(xmlDocGetRootElement(doc), "ErrorResponse")
            ? child(xmlDocGetRootElement(doc), "Error")
            : child(child(xmlDocGetRootElement(doc), "Errors"), "Error");
    if ((named(xmlDocGetRootElement(doc), "Response") ||
         named(xmlDocGetRootElement(doc), "ErrorResponse")) &&
        e) {
        is = true;
        if (text(child(e, "Code"), code, clen) != 0)
            code[0] = '\0';
        if (text(child(e, "Message"), msg, mlen) != 0)
            msg[0] = '\0';
    }
    xmlFreeDoc(doc);
    return is;
}

/* The instance's tags (tagSet/item{key,value}), and its Name tag. */
static int read_tags(const xmlNode *set, struct cloud_instance *v, size_t *warnings)
{
    size_t n = 0;

    for (xmlNode *it = set ? set->children : NULL; it; it = it->next)
        n += named(it, "item");
    if (n == 0)
        return GI_OK;
    if (n > AWS_MAX_TAGS) {
        (*warnings)++;
        n = AWS_MAX_TAGS;
    }
    if (!(v->tags = calloc(n, sizeof *v->tags)))
        return GI_INTERNAL;
    for (xmlNode *it = set->children; it && v->ntags < n; it = it->next) {
        char key[256], val[512];
        if (!named(it, "item"))
            continue;
        if (text(child(it, "key"), key, sizeof key) != 0 || !key[0] ||
            text(child(it, "value"), val, sizeof val) != 0) {
            (*warnings)++;
            continue;
        }
        v->tags[v->ntags].key = strdup(key);
        v->tags[v->ntags].value = strdup(val);
        if (!v->tags[v->ntags].key || !v->tags[v->ntags].value) {
            free(v->tags[v->ntags].key);
            free(v->tags[v->ntags].value);
            return GI_INTERNAL;
        }
        v->ntags++;
        if (strcmp(key, "Name") == 0 && !gi_strlcpy(v->name, val, sizeof v->name)) {
            v->name[0] = '\0';
            (*warnings)++;
        }
    }
    return GI_OK;
}

/* One instancesSet/item into v. */
static int read_instance(const xmlNode *it, const char *owner, const char *region,
                         struct cloud_instance *v, size_t *warnings)
{
    char buf[128];
    const xmlNode *st = child(it, "instanceState");
    int64_t code;

    memset(v, 0, sizeof *v);
    v->gpu_count = -1;
    v->gpu_memory_mib = -1;
    gi_strlcpy(v->provider, "aws", sizeof v->provider);
    if (text(child(it, "instanceId"), v->instance_id, sizeof v->instance_id) != 0)
        v->instance_id[0] = '\0';
    gi_strlcpy(v->account, owner, sizeof v->account);
    gi_strlcpy(v->region, region ? region : "", sizeof v->region);
    field(child(it, "instanceType"), v->machine_type, sizeof v->machine_type, warnings);
    if (strncmp(v->machine_type, "ml.", 3) == 0)
        memmove(v->machine_type, v->machine_type + 3, strlen(v->machine_type + 3) + 1);
    field(child(child(it, "placement"), "availabilityZone"), v->zone, sizeof v->zone, warnings);
    field(child(it, "privateIpAddress"), v->private_ip, sizeof v->private_ip, warnings);
    field(child(st, "name"), v->state_raw, sizeof v->state_raw, warnings);
    if (text(child(st, "code"), buf, sizeof buf) == 0 && buf[0] &&
        gi_parse_int64(buf, 0, INT32_MAX, &code) == GI_OK)
        v->state = aws_state(code & 0xFF);
    else
        v->state = state_by_name(v->state_raw);
    if (text(child(it, "launchTime"), buf, sizeof buf) == 0 && buf[0] &&
        gi_time_parse(buf, &v->launch_time) != GI_OK) {
        v->launch_time = 0;
        (*warnings)++;
    }
    return read_tags(child(it, "tagSet"), v, warnings);
}

static int grow(void **items, size_t *cap, size_t n, size_t size, size_t max)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return GI_OK;
    if (n >= max)
        return GI_TOO_LARGE;
    ncap = *cap ? *cap * 2 : 64;
    if (ncap > max)
        ncap = max;
    if (!(p = realloc(*items, ncap * size)))
        return GI_INTERNAL;
    *items = p;
    *cap = ncap;
    return GI_OK;
}

int aws_parse_instances(const char *data, size_t len, const char *region, struct aws_instances *out,
                        char *err, size_t errlen)
{
    size_t n0 = out->n;
    int rc;
    xmlDoc *doc = read_doc(data, len, "DescribeInstancesResponse", err, errlen, &rc);
    xmlNode *root;

    out->next_token[0] = '\0';
    if (!doc)
        return rc;
    root = xmlDocGetRootElement(doc);
    for (xmlNode *r = child(root, "reservationSet") ? child(root, "reservationSet")->children
                                                    : NULL;
         r && rc == GI_OK; r = r->next) {
        char owner[128];
        if (!named(r, "item"))
            continue;
        if (text(child(r, "ownerId"), owner, sizeof owner) != 0) {
            owner[0] = '\0';
            out->warnings++;
        }
        for (xmlNode *it = child(r, "instancesSet") ? child(r, "instancesSet")->children : NULL;
             it && rc == GI_OK; it = it->next) {
            struct cloud_instance *v;
            if (!named(it, "item"))
                continue;
            if ((rc = grow((void **)&out->items, &out->cap, out->n, sizeof *out->items,
                           AWS_MAX_INSTANCES)) != GI_OK) {
                if (rc == GI_TOO_LARGE)
                    fail(err, errlen, "more than %d instances", AWS_MAX_INSTANCES);
                break;
            }
            v = &out->items[out->n];
            rc = read_instance(it, owner, region, v, &out->warnings);
            if (rc == GI_OK && v->instance_id[0] == '\0') {
                cloud_instances_clear(v, 1);
                out->skipped++;
                continue;
            }
            out->n++;
            if (rc != GI_OK)
                break;
        }
    }
    if (rc == GI_OK &&
        text(child(root, "nextToken"), out->next_token, sizeof out->next_token) != 0) {
        fail(err, errlen, "nextToken is longer than %d bytes", AWS_TOKEN_LEN - 1);
        rc = GI_INVALID;
    }
    if (rc != GI_OK) {
        cloud_instances_clear(out->items + n0, out->n - n0);
        out->n = n0;
        out->next_token[0] = '\0';
    }
    xmlFreeDoc(doc);
    return rc;
}

void aws_instances_free(struct aws_instances *out)
{
    cloud_instances_clear(out->items, out->n);
    free(out->items);
    memset(out, 0, sizeof *out);
}

/* gpuInfo of one instanceTypeSet/item. */
static void read_gpus(const xmlNode *info, struct aws_gpu_type *t)
{
    char buf[128];
    int64_t v;

    t->count = 0;
    t->memory_mib = -1;
    t->partition = 1;
    for (xmlNode *g = child(info, "gpus") ? child(info, "gpus")->children : NULL; g; g = g->next) {
        char man[64], name[64];
        int64_t count = 0, logical = 0;
        double part = 1;
        if (!named(g, "item"))
            continue;
        if (text(child(g, "count"), buf, sizeof buf) == 0 && buf[0])
            gi_parse_int64(buf, 0, 1024, &count);
        if (text(child_either(g, "logicalGpuCount", "LogicalGpuCount"), buf, sizeof buf) == 0 &&
            buf[0])
            gi_parse_int64(buf, 0, 1024, &logical);
        if (text(child_either(g, "gpuPartitionSize", "GpuPartitionSize"), buf, sizeof buf) == 0 &&
            buf[0] && gi_parse_double(buf, 0, 1, &part) != GI_OK)
            part = 1;
        /* A fractional GPU says Count 0: its logical count is what the
         * instance holds, each a share of one (its partition size). */
        if (count == 0 && logical > 0)
            count = logical;
        if (count > 0 && part > 0 && part < 1)
            t->partition = part;
        if (t->count + count <= 1024)
            t->count += (int)count;
        if (t->model[0] == '\0' && text(child(g, "manufacturer"), man, sizeof man) == 0 &&
            text(child(g, "name"), name, sizeof name) == 0 && name[0])
            snprintf(t->model, sizeof t->model, "%s%s%s", man, man[0] ? " " : "", name);
        if (t->memory_mib < 0 &&
            text(child(child(g, "memoryInfo"), "sizeInMiB"), buf, sizeof buf) == 0 && buf[0] &&
            gi_parse_int64(buf, 1, INT32_MAX, &v) == GI_OK)
            t->memory_mib = v;
    }
}

int aws_parse_types(const char *data, size_t len, struct aws_types *out, char *err, size_t errlen)
{
    size_t n0 = out->n;
    int rc;
    xmlDoc *doc = read_doc(data, len, "DescribeInstanceTypesResponse", err, errlen, &rc);
    xmlNode *root, *set;

    out->next_token[0] = '\0';
    if (!doc)
        return rc;
    root = xmlDocGetRootElement(doc);
    set = child(root, "instanceTypeSet");
    for (xmlNode *it = set ? set->children : NULL; it && rc == GI_OK; it = it->next) {
        struct aws_gpu_type *t;
        if (!named(it, "item"))
            continue;
        if ((rc = grow((void **)&out->items, &out->cap, out->n, sizeof *out->items,
                       AWS_MAX_INSTANCES)) != GI_OK)
            break;
        t = &out->items[out->n];
        memset(t, 0, sizeof *t);
        if (text(child(it, "instanceType"), t->type, sizeof t->type) != 0 || !t->type[0])
            continue;
        read_gpus(child(it, "gpuInfo"), t);
        out->n++;
    }
    if (rc == GI_OK && text(child(root, "nextToken"), out->next_token, sizeof out->next_token) != 0)
        rc = GI_INVALID;
    if (rc != GI_OK) {
        fail(err, errlen, "DescribeInstanceTypes: %s", gi_status_name(rc));
        out->n = n0;
        out->next_token[0] = '\0';
    }
    xmlFreeDoc(doc);
    return rc;
}

void aws_types_free(struct aws_types *out)
{
    free(out->items);
    memset(out, 0, sizeof *out);
}

/* A credential value fit for a header or for "<id>:<secret>": text
 * without control characters or line breaks (and, for the key id, no
 * ':'). */
static bool cred_ok(const char *v, bool is_id)
{
    if (!v[0] || !gi_text_ok(v))
        return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (is_id && (*p == ':' || *p == ' ')))
            return false;
    return true;
}

/* Fills out from the four values (any may be NULL); GI_OK or GI_INVALID
 * naming the first unusable one in err, out zeroed. */
static int creds_set(struct aws_creds *out, const char *id, const char *secret, const char *token,
                     const char *expiration, const char *names[4], char *err, size_t errlen)
{
    const char *vals[3] = {id, secret, token};
    char *dst[3] = {out->key_id, out->secret, out->token};
    size_t cap[3] = {sizeof out->key_id, sizeof out->secret, sizeof out->token};

    memset(out, 0, sizeof *out);
    for (int i = 0; i < 3; i++)
        if (!vals[i] || !cred_ok(vals[i], i == 0) || !gi_strlcpy(dst[i], vals[i], cap[i])) {
            fail(err, errlen, "%s is %s", names[i],
                 !vals[i] || !vals[i][0] ? "missing" : "too long or not usable");
            explicit_bzero(out, sizeof *out);
            return GI_INVALID;
        }
    if (!expiration || gi_time_parse(expiration, &out->expires) != GI_OK || out->expires <= 0) {
        fail(err, errlen, "%s is %s", names[3], expiration ? "not a time" : "missing");
        explicit_bzero(out, sizeof *out);
        return GI_INVALID;
    }
    return GI_OK;
}

int aws_parse_assume_role(const char *data, size_t len, struct aws_creds *out, char *err,
                          size_t errlen)
{
    static const char *names[4] = {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"};
    char id[AWS_KEY_ID_LEN], secret[AWS_SECRET_LEN], token[AWS_SESSION_TOKEN_LEN], exp[64];
    char *vals[4] = {id, secret, token, exp};
    size_t caps[4] = {sizeof id, sizeof secret, sizeof token, sizeof exp};
    xmlParserCtxt *ctxt;
    xmlDoc *doc;
    xmlNode *r, *cr;
    int rc = GI_INVALID;

    memset(out, 0, sizeof *out);
    if (len > AWS_MAX_BODY) {
        fail(err, errlen, "the answer is larger than %u bytes", AWS_MAX_BODY);
        return GI_TOO_LARGE;
    }
    if (!(ctxt = xmlNewParserCtxt())) {
        fail(err, errlen, "cannot start the XML parser");
        return GI_INTERNAL;
    }
    doc = xmlCtxtReadMemory(ctxt, data, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOBLANKS);
    xmlFreeParserCtxt(ctxt);
    if (!doc) {
        fail(err, errlen, "the answer is not XML");
        return GI_INVALID;
    }
    r = xmlDocGetRootElement(doc);
    if (named(r, "ErrorResponse")) {
        char code[64] = "", msg[400] = "";
        xmlNode *e = child(r, "Error");
        if (text(child(e, "Code"), code, sizeof code) != 0)
            code[0] = '\0';
        if (text(child(e, "Message"), msg, sizeof msg) != 0)
            msg[0] = '\0';
        fail(err, errlen, "STS error %s: %s", code[0] ? code : "(no code)", msg);
        goto cleanup;
    }
    if (!named(r, "AssumeRoleResponse")) {
        fail(err, errlen, "root element is <%.40s>, not <AssumeRoleResponse>",
             r ? (const char *)r->name : "");
        goto cleanup;
    }
    cr = child(child(r, "AssumeRoleResult"), "Credentials");
    if (!cr) {
        fail(err, errlen, "the answer has no AssumeRoleResult/Credentials");
        goto cleanup;
    }
    for (int i = 0; i < 4; i++)
        if (text(child(cr, names[i]), vals[i], caps[i]) != 0)
            vals[i][0] = '\0';
    rc = creds_set(out, id, secret, token, exp[0] ? exp : NULL, names, err, errlen);
cleanup:
    explicit_bzero(secret, sizeof secret);
    explicit_bzero(token, sizeof token);
    xmlFreeDoc(doc);
    return rc;
}

int aws_parse_imds_creds(const char *data, size_t len, struct aws_creds *out, char *err,
                         size_t errlen)
{
    static const char *names[4] = {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"};
    json_t *j;
    const char *code;
    int rc = GI_INVALID;

    memset(out, 0, sizeof *out);
    if (len > AWS_MAX_BODY) {
        fail(err, errlen, "the answer is larger than %u bytes", AWS_MAX_BODY);
        return GI_TOO_LARGE;
    }
    if (!(j = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL)) || !json_is_object(j)) {
        fail(err, errlen, "the answer is not a JSON object");
        goto cleanup;
    }
    code = json_string_value(json_object_get(j, "Code"));
    if (code && strcmp(code, "Success") != 0) {
        fail(err, errlen, "the instance metadata service says Code %.60s",
             gi_text_ok(code) ? code : "(unreadable)");
        goto cleanup;
    }
    rc = creds_set(out, json_string_value(json_object_get(j, names[0])),
                   json_string_value(json_object_get(j, names[1])),
                   json_string_value(json_object_get(j, names[2])),
                   json_string_value(json_object_get(j, names[3])), names, err, errlen);
cleanup:
    json_decref(j);
    return rc;
}
