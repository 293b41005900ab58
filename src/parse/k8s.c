/* Kubernetes NodeList / PodList / Status parsers; see k8s.h. */
#include "parse/k8s.h"

#include "core/status.h"
#include "core/util.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Quantities ------------------------------------------------------ */

/* Digits of a magnitude: room for K8S_MAX_QUANTITY input digits, plus the
 * ~19 decimal digits that multiplying by up to 2^60 adds. */
#define QDIGITS (K8S_MAX_QUANTITY + 24)
#define QEXP_MAX 100000 /* |decimal exponent| beyond this is absurd */

/* Reads a decimal SI, binary SI or exponent suffix at s into *dec and
 * *bin (value times 10^dec times 2^bin); false when s is not one. */
static bool quantity_suffix(const char *s, int *dec, int *bin)
{
    static const struct {
        const char *sfx;
        int dec, bin;
    } table[] = {
        {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
        {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
        {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(s, table[i].sfx) == 0) {
            *dec = table[i].dec;
            *bin = table[i].bin;
            return true;
        }
    }
    /* Decimal exponent: e or E, an optional sign, at least one digit. */
    if (s[0] != 'e' && s[0] != 'E')
        return false;
    const char *p = s + 1;
    int sign = 1, e = 0;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (e < QEXP_MAX)
            e = e * 10 + (*p - '0');
    }
    *dec = sign * e;
    *bin = 0;
    return true;
}

int k8s_quantity_parse(const char *s, int shift, struct k8s_quantity *q)
{
    unsigned char d[QDIGITS]; /* magnitude digits, most significant first */
    size_t n = 0, len;
    int point; /* digits d[0..point) are the integer part; may be <0 or >n */
    int dec = 0, bin = 0;
    bool negative = false, any = false;
    const char *p = s;

    memset(q, 0, sizeof *q);
    len = strlen(s);
    if (len == 0 || len > K8S_MAX_QUANTITY)
        return GI_INVALID;
    if (*p == '+' || *p == '-')
        negative = *p++ == '-';
    /* Integer digits, skipping leading zeros. */
    for (; *p >= '0' && *p <= '9'; p++) {
        any = true;
        if (n > 0 || *p != '0')
            d[n++] = (unsigned char)(*p - '0');
    }
    point = (int)n;
    if (*p == '.') {
        p++;
        for (; *p >= '0' && *p <= '9'; p++) {
            any = true;
            if (n > 0 || *p != '0')
                d[n++] = (unsigned char)(*p - '0');
            else
                point--; /* a leading zero after the point */
        }
    }
    if (!any || !quantity_suffix(p, &dec, &bin))
        return GI_INVALID;
    while (n > 0 && d[n - 1] == 0)
        n--;
    if (n == 0)
        return GI_OK; /* zero, whatever its sign or exponent */
    /* Multiply by 2^bin, one doubling at a time, growing on the left. */
    for (int b = 0; b < bin; b++) {
        unsigned carry = 0;
        for (size_t i = n; i-- > 0;) {
            unsigned v = d[i] * 2u + carry;
            d[i] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        if (carry) {
            memmove(d + 1, d, n);
            d[0] = (unsigned char)carry;
            n++;
            point++;
        }
    }
    point += dec + shift;
    q->negative = negative;
    if (point > 20)
        return GI_TOO_LARGE; /* leading digit nonzero: >= 10^20 > 2^64 */
    for (int i = 0; i < point; i++) {
        unsigned digit = (size_t)i < n ? d[i] : 0;
        if (q->whole > (UINT64_MAX - digit) / 10)
            return GI_TOO_LARGE;
        q->whole = q->whole * 10 + digit;
    }
    for (size_t i = point > 0 ? (size_t)point : 0; i < n; i++)
        if (d[i] != 0)
            q->frac = true;
    return GI_OK;
}

/* Parses s scaled by 10^shift into a non-negative int64; rounds a fraction
 * up when round_up, else rejects it. */
static int quantity_int(const char *s, int shift, bool round_up, int64_t *out)
{
    struct k8s_quantity q;
    int st = k8s_quantity_parse(s, shift, &q);

    if (st != GI_OK)
        return st;
    if (q.negative || (q.frac && !round_up))
        return GI_INVALID;
    if (q.whole > (uint64_t)INT64_MAX - (q.frac ? 1 : 0))
        return GI_TOO_LARGE;
    *out = (int64_t)q.whole + (q.frac ? 1 : 0);
    return GI_OK;
}

int k8s_quantity_count(const char *s, int64_t *out) { return quantity_int(s, 0, false, out); }

int k8s_quantity_bytes(const char *s, int64_t *out) { return quantity_int(s, 0, true, out); }

int k8s_quantity_milli(const char *s, int64_t *out) { return quantity_int(s, 3, true, out); }

/* ---- Shared helpers -------------------------------------------------- */

/* Where an error happened: the item being parsed, for messages. */
struct ctx {
    char *err;
    size_t errlen;
    long item; /* -1 outside items */
};

/* Writes "items[N].<message>" (or the message alone outside items) into
 * the error buffer and returns st. */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, int st, const char *fmt, ...)
{
    char msg[K8S_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err == NULL || c->errlen == 0)
        return st;
    if (c->item >= 0)
        snprintf(c->err, c->errlen, "items[%ld].%s", c->item, msg);
    else
        snprintf(c->err, c->errlen, "%s", msg);
    return st;
}

/* Appends "; msg" (or msg) to a bounded warning; silently cut when full. */
__attribute__((format(printf, 2, 3))) static void warn(char w[K8S_ERR_LEN], const char *fmt, ...)
{
    size_t used = strlen(w);
    va_list ap;

    if (used + 3 >= K8S_ERR_LEN)
        return;
    if (used > 0) {
        memcpy(w + used, "; ", 3);
        used += 2;
    }
    va_start(ap, fmt);
    vsnprintf(w + used, K8S_ERR_LEN - used, fmt, ap);
    va_end(ap);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Checks a JSON string for storage: text without control characters
 * and shorter than cap. GI_OK, GI_INVALID or GI_TOO_LARGE; *why says. */
static int check_text(const json_t *v, size_t cap, const char **why)
{
    if (!json_is_string(v)) {
        *why = "not a string";
        return GI_INVALID;
    }
    if (json_string_length(v) >= cap) {
        *why = "too long";
        return GI_TOO_LARGE;
    }
    if (!gi_text_ok(json_string_value(v))) {
        *why = "control characters";
        return GI_INVALID;
    }
    return GI_OK;
}

/* Copies the string member key of obj (which may be NULL) into dst.
 * Absent or null leaves "". field names it in errors. */
static int get_str(struct ctx *c, const json_t *obj, const char *key, const char *field, char *dst,
                   size_t cap)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    const char *why;
    int st;

    dst[0] = '\0';
    if (v == NULL || json_is_null(v))
        return GI_OK;
    if ((st = check_text(v, cap, &why)) != GI_OK)
        return fail(c, st, "%s: %s", field, why);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return GI_OK;
}

/* Returns member key of obj if it is an object, NULL when absent or null;
 * *st becomes GI_INVALID when it is something else. */
static const json_t *get_obj(struct ctx *c, const json_t *obj, const char *key, const char *field,
                             int *st)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;

    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_object(v)) {
        *st = fail(c, GI_INVALID, "%s: not an object", field);
        return NULL;
    }
    return v;
}

/* As get_obj, for arrays. */
static const json_t *get_arr(struct ctx *c, const json_t *obj, const char *key, const char *field,
                             int *st)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;

    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_array(v)) {
        *st = fail(c, GI_INVALID, "%s: not an array", field);
        return NULL;
    }
    return v;
}

/* A quantity member as a string: JSON strings as they are, integers
 * (which the API server also accepts) printed. false otherwise. */
static bool quantity_text(const json_t *v, char buf[K8S_MAX_QUANTITY + 2])
{
    if (json_is_string(v)) {
        if (json_string_length(v) > K8S_MAX_QUANTITY)
            return false;
        memcpy(buf, json_string_value(v), json_string_length(v) + 1);
        return true;
    }
    if (json_is_integer(v)) {
        snprintf(buf, K8S_MAX_QUANTITY + 2, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return true;
    }
    return false;
}

/* Parses a GPU count quantity; errors name field[name] and the reason. */
static int gpu_count(struct ctx *c, const json_t *v, const char *field, const char *name,
                     int64_t *out)
{
    char buf[K8S_MAX_QUANTITY + 2];
    struct k8s_quantity q;
    int st;

    if (!quantity_text(v, buf))
        return fail(c, GI_INVALID, "%s[%s]: not a quantity", field, name);
    st = k8s_quantity_parse(buf, 0, &q);
    if (st == GI_TOO_LARGE)
        return fail(c, st, "%s[%s]: quantity \"%s\" too large", field, name, buf);
    if (st != GI_OK)
        return fail(c, st, "%s[%s]: malformed quantity \"%s\"", field, name, buf);
    if (q.negative)
        return fail(c, GI_INVALID, "%s[%s]: negative count \"%s\"", field, name, buf);
    if (q.frac)
        return fail(c, GI_INVALID, "%s[%s]: fractional count \"%s\"", field, name, buf);
    if (q.whole > (uint64_t)INT64_MAX)
        return fail(c, GI_TOO_LARGE, "%s[%s]: quantity \"%s\" too large", field, name, buf);
    *out = (int64_t)q.whole;
    return GI_OK;
}

/* GPU resource names: whole devices or MIG devices; 0 for any other. */
enum res_kind { RES_OTHER = 0, RES_WHOLE, RES_MIG };

static enum res_kind resource_kind(const char *name, enum gi_vendor *vendor)
{
    if (strcmp(name, "nvidia.com/gpu") == 0 || strcmp(name, "nvidia.com/gpu.shared") == 0 ||
        strcmp(name, "alpha.kubernetes.io/nvidia-gpu") == 0) {
        *vendor = GI_VENDOR_NVIDIA;
        return RES_WHOLE;
    }
    if (strcmp(name, "amd.com/gpu") == 0) {
        *vendor = GI_VENDOR_AMD;
        return RES_WHOLE;
    }
    if (starts_with(name, "nvidia.com/mig-") && name[strlen("nvidia.com/mig-")] != '\0') {
        *vendor = GI_VENDOR_NVIDIA;
        return RES_MIG;
    }
    return RES_OTHER;
}

/* Sums and products of non-negative counts, saturating at INT64_MAX so
 * that absurd quantities cannot overflow. */
static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static int64_t sat_mul(int64_t a, int64_t b)
{
    return a != 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
}

/* Whole decimal digits only (GFD integer labels); -1 when not. */
static int64_t label_int(const char *s)
{
    int64_t v;

    if (s[0] < '0' || s[0] > '9' || strlen(s) > 18 || gi_parse_int64(s, 0, INT64_MAX, &v) != GI_OK)
        return -1;
    return v;
}

/* ---- List envelope --------------------------------------------------- */

bool k8s_status_expired(const struct k8s_status *st)
{
    return st->present && (st->code == 410 || strcmp(st->reason, "Expired") == 0 ||
                           strcmp(st->reason, "Gone") == 0);
}

/* Copies a string member cut to fit (for human-readable text only). */
static void copy_cut(const json_t *obj, const char *key, char *dst, size_t cap)
{
    const json_t *v = json_object_get(obj, key);

    dst[0] = '\0';
    if (json_is_string(v) && gi_text_ok(json_string_value(v)) &&
        !gi_strlcpy(dst, json_string_value(v), cap)) {
        /* Cut before a partial UTF-8 sequence, not inside it. */
        size_t n = strlen(dst);
        while (n > 0 && ((unsigned char)dst[n - 1] & 0xc0) == 0x80)
            n--;
        if (n > 0 && (unsigned char)dst[n - 1] >= 0xc0)
            n--;
        dst[n] = '\0';
    }
}

/* Loads the body and checks the envelope: a list of the expected kind,
 * whose metadata goes to meta, or a Status, which goes to status. On
 * GI_OK *root (caller decrefs) and *items (borrowed, maybe empty) are set. */
static int load_list(struct ctx *c, const char *data, size_t len, const char *list_kind,
                     json_t **root, const json_t **items, struct k8s_list_meta *meta,
                     struct k8s_status *status)
{
    json_error_t jerr;
    const json_t *md, *v;
    const char *kind;
    int st = GI_OK;

    *root = NULL;
    meta->remaining = -1;
    status->code = -1;
    if (len > K8S_MAX_BODY)
        return fail(c, GI_TOO_LARGE, "body larger than %u bytes", K8S_MAX_BODY);
    *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (*root == NULL)
        return fail(c, GI_INVALID, "not JSON: %s at line %d column %d", jerr.text, jerr.line,
                    jerr.column);
    if (!json_is_object(*root))
        return fail(c, GI_INVALID, "not a JSON object");
    v = json_object_get(*root, "kind");
    if (v != NULL && !json_is_string(v))
        return fail(c, GI_INVALID, "kind: not a string");
    kind = v ? json_string_value(v) : "";
    if (strcmp(kind, "Status") == 0) {
        status->present = true;
        v = json_object_get(*root, "code");
        if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 999)
            status->code = (int64_t)json_integer_value(v);
        copy_cut(*root, "status", status->status, sizeof status->status);
        copy_cut(*root, "reason", status->reason, sizeof status->reason);
        copy_cut(*root, "message", status->message, sizeof status->message);
        if (strcmp(status->status, "Success") == 0)
            return fail(c, GI_INVALID, "kind: Status (Success) where a %s was expected", list_kind);
        if (k8s_status_expired(status))
            return fail(c, GI_CONFLICT, "listing expired (%" PRId64 " %s): restart it",
                        status->code, status->reason);
        return fail(c, GI_UNAVAILABLE, "API server answered %" PRId64 " %s: %s", status->code,
                    status->reason, status->message);
    }
    if (kind[0] != '\0' && strcmp(kind, list_kind) != 0 && strcmp(kind, "List") != 0)
        return fail(c, GI_INVALID, "kind: \"%.64s\" where a %s was expected", kind, list_kind);
    md = get_obj(c, *root, "metadata", "metadata", &st);
    if (st != GI_OK)
        return st;
    if ((st = get_str(c, md, "resourceVersion", "metadata.resourceVersion", meta->resource_version,
                      sizeof meta->resource_version)) != GI_OK ||
        (st = get_str(c, md, "continue", "metadata.continue", meta->continue_token,
                      sizeof meta->continue_token)) != GI_OK)
        return st;
    v = md ? json_object_get(md, "remainingItemCount") : NULL;
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return fail(c, GI_INVALID, "metadata.remainingItemCount: not a count");
        meta->remaining = (int64_t)json_integer_value(v);
    }
    v = json_object_get(*root, "items");
    if (v == NULL)
        return fail(c, GI_INVALID, "items: missing");
    if (!json_is_null(v) && !json_is_array(v))
        return fail(c, GI_INVALID, "items: not an array");
    if (json_is_array(v) && json_array_size(v) > K8S_MAX_ITEMS)
        return fail(c, GI_TOO_LARGE, "items: more than %d in one page", K8S_MAX_ITEMS);
    *items = v;
    return GI_OK;
}

/* Checks an item's own kind, when it has one. */
static int item_kind(struct ctx *c, const json_t *item, const char *kind)
{
    const json_t *v;

    if (!json_is_object(item))
        return fail(c, GI_INVALID, "not an object");
    v = json_object_get(item, "kind");
    if (v != NULL && (!json_is_string(v) || strcmp(json_string_value(v), kind) != 0))
        return fail(c, GI_INVALID, "kind: not %s", kind);
    return GI_OK;
}

/* ---- Nodes ----------------------------------------------------------- */

/* Finds or adds the node resource entry for name. */
static struct k8s_node_res *node_res(struct ctx *c, struct k8s_node *n, const char *name, int *st)
{
    for (size_t i = 0; i < n->nres; i++)
        if (strcmp(n->res[i].name, name) == 0)
            return &n->res[i];
    if (n->nres == K8S_MAX_NODE_RES) {
        *st = fail(c, GI_TOO_LARGE, "status: more than %d GPU resources", K8S_MAX_NODE_RES);
        return NULL;
    }
    if (strlen(name) >= K8S_RES_LEN) {
        *st = fail(c, GI_TOO_LARGE, "status: resource name \"%.64s…\" too long", name);
        return NULL;
    }
    struct k8s_node_res *r = &n->res[n->nres++];
    memcpy(r->name, name, strlen(name) + 1);
    r->capacity = -1;
    r->allocatable = -1;
    return r;
}

/* Reads the GPU entries of status.capacity or status.allocatable, and
 * cpu and memory from capacity. */
static int node_resources(struct ctx *c, struct k8s_node *n, const json_t *map, bool capacity)
{
    const char *field = capacity ? "status.capacity" : "status.allocatable";
    const char *key;
    json_t *v;
    int st = GI_OK;

    json_object_foreach((json_t *)map, key, v) {
        enum gi_vendor vendor = GI_VENDOR_UNKNOWN;
        char buf[K8S_MAX_QUANTITY + 2];

        if (resource_kind(key, &vendor) != RES_OTHER) {
            int64_t count;
            struct k8s_node_res *r;
            if ((st = gpu_count(c, v, field, key, &count)) != GI_OK)
                return st;
            if ((r = node_res(c, n, key, &st)) == NULL)
                return st;
            if (capacity)
                r->capacity = count;
            else
                r->allocatable = count;
            if (n->vendor == GI_VENDOR_UNKNOWN)
                n->vendor = vendor;
        } else if (capacity && (strcmp(key, "cpu") == 0 || strcmp(key, "memory") == 0)) {
            bool cpu = key[0] == 'c';
            int64_t *dst = cpu ? &n->cpu_milli : &n->memory_bytes;
            if (!quantity_text(v, buf))
                return fail(c, GI_INVALID, "%s[%s]: not a quantity", field, key);
            st = cpu ? k8s_quantity_milli(buf, dst) : k8s_quantity_bytes(buf, dst);
            if (st != GI_OK)
                return fail(c, st, "%s[%s]: bad quantity \"%s\"", field, key, buf);
        }
    }
    return GI_OK;
}

/* Copies a node label of interest; absent leaves "". */
static int node_label(struct ctx *c, const json_t *labels, const char *key, char *dst, size_t cap)
{
    char field[128];

    snprintf(field, sizeof field, "metadata.labels[%s]", key);
    return get_str(c, labels, key, field, dst, cap);
}

/* An integer GFD label; absent gives -1, a malformed one -1 and a warning. */
static int node_label_int(struct ctx *c, struct k8s_node *n, const json_t *labels, const char *key,
                          int64_t *out)
{
    char buf[K8S_VALUE_LEN];
    int st;

    *out = -1;
    if ((st = node_label(c, labels, key, buf, sizeof buf)) != GI_OK)
        return st;
    if (buf[0] != '\0' && (*out = label_int(buf)) < 0)
        warn(n->warning, "label %s: not a whole number \"%s\"", key, buf);
    return GI_OK;
}

/* Mixed-strategy labels nvidia.com/mig-<profile>.count|.memory. */
static int node_mig_labels(struct ctx *c, struct k8s_node *n, const json_t *labels)
{
    static const char prefix[] = "nvidia.com/mig-";
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)labels, key, v) {
        bool count = ends_with(key, ".count");
        size_t plen, klen = strlen(key);
        char profile[GI_NAME_LEN];
        struct k8s_mig_label *m = NULL;
        int64_t val;

        if (!starts_with(key, prefix) || (!count && !ends_with(key, ".memory")))
            continue;
        if (klen <= sizeof prefix - 1 + (count ? 6 : 7))
            continue;
        plen = klen - (sizeof prefix - 1) - (count ? 6 : 7);
        if (plen >= sizeof profile)
            continue;
        memcpy(profile, key + sizeof prefix - 1, plen);
        profile[plen] = '\0';
        if (!json_is_string(v) || (val = label_int(json_string_value(v))) < 0) {
            warn(n->warning, "label %.80s: not a whole number", key);
            continue;
        }
        for (size_t i = 0; i < n->nmigs; i++)
            if (strcmp(n->migs[i].profile, profile) == 0)
                m = &n->migs[i];
        if (m == NULL) {
            if (n->nmigs == K8S_MAX_MIG_LABELS)
                return fail(c, GI_TOO_LARGE, "metadata.labels: more than %d MIG profiles",
                            K8S_MAX_MIG_LABELS);
            m = &n->migs[n->nmigs++];
            memcpy(m->profile, profile, plen + 1);
            m->count = -1;
            m->memory_mb = -1;
        }
        if (count)
            m->count = val;
        else
            m->memory_mb = val;
    }
    return GI_OK;
}

/* Splits gpu.product into its base name, -SHARED and -MIG-<profile>. */
static void node_product(struct k8s_node *n)
{
    char base[K8S_VALUE_LEN];
    char *mig;

    memcpy(base, n->product, sizeof base);
    if (ends_with(base, "-SHARED")) {
        base[strlen(base) - strlen("-SHARED")] = '\0';
        n->shared = true;
    }
    if ((mig = strstr(base, "-MIG-")) != NULL) {
        /* The last "-MIG-" introduces the profile. */
        char *next;
        while ((next = strstr(mig + 1, "-MIG-")) != NULL)
            mig = next;
        gi_strlcpy(n->mig_profile, mig + 5, sizeof n->mig_profile);
        *mig = '\0';
    }
    memcpy(n->product_base, base, sizeof base);
}

static int64_t res_capacity(const struct k8s_node *n, const char *name)
{
    for (size_t i = 0; i < n->nres; i++)
        if (strcmp(n->res[i].name, name) == 0)
            return n->res[i].capacity;
    return -1;
}

/* Copies the node's text labels into n->labels_json, leaving out what
 * does not fit. */
static void node_labels_json(struct k8s_node *n, const json_t *labels)
{
    json_t *o = json_object();
    const char *key;
    json_t *v;
    char *text;

    json_object_foreach((json_t *)labels, key, v) {
        size_t len;
        if (!json_is_string(v) || !gi_text_ok(key) || !gi_text_ok(json_string_value(v)) ||
            strlen(key) >= K8S_KEY_LEN || json_string_length(v) >= K8S_VALUE_LEN)
            continue;
        json_object_set(o, key, v);
        text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        len = text ? strlen(text) : SIZE_MAX;
        free(text);
        if (len >= sizeof n->labels_json) {
            /* Full: this label and the rest are left out. */
            json_object_del(o, key);
            break;
        }
    }
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    gi_strlcpy(n->labels_json, text ? text : "{}", sizeof n->labels_json);
    free(text);
    json_decref(o);
}

/* Physical GPUs and MIG devices from labels and capacities. */
static void node_derive(struct k8s_node *n)
{
    int64_t gpu = res_capacity(n, "nvidia.com/gpu");
    int64_t shared = res_capacity(n, "nvidia.com/gpu.shared");
    int64_t legacy = res_capacity(n, "alpha.kubernetes.io/nvidia-gpu");
    int64_t amd = res_capacity(n, "amd.com/gpu");
    int64_t mig_sum = -1, cap;
    /* GFD labels mig.strategy=single on nodes whose GPUs are not in MIG
     * mode too; only the product suffix says the devices are MIG. */
    bool single = n->mig_profile[0] != '\0';
    bool mixed = strcmp(n->mig_strategy, "mixed") == 0;
    int64_t replicas = n->replicas > 1 ? n->replicas : 1;

    if (n->replicas > 1 ||
        (n->sharing_strategy[0] != '\0' && strcmp(n->sharing_strategy, "none") != 0) || shared >= 0)
        n->shared = true;
    for (size_t i = 0; i < n->nres; i++)
        if (starts_with(n->res[i].name, "nvidia.com/mig-") && n->res[i].capacity >= 0)
            mig_sum = sat_add(mig_sum < 0 ? 0 : mig_sum, n->res[i].capacity);
    n->physical_gpus = -1;
    n->mig_devices = mig_sum;

    if (n->vendor == GI_VENDOR_AMD) {
        n->physical_gpus = amd;
        return;
    }
    if (single) {
        /* nvidia.com/gpu and gpu.count count MIG devices, not GPUs. */
        n->mig_devices = gpu >= 0 ? gpu : n->gpu_count;
        if (gpu >= 0 && n->gpu_count >= 0 && gpu != sat_mul(n->gpu_count, replicas))
            warn(n->warning, "capacity nvidia.com/gpu %" PRId64 " but gpu.count %" PRId64, gpu,
                 n->gpu_count);
        return;
    }
    cap = gpu >= 0 ? gpu : shared >= 0 ? shared : legacy;
    if (n->gpu_count >= 0) {
        /* GFD counts physical GPUs; sharing multiplies the capacity. */
        n->physical_gpus = n->gpu_count;
        if (!mixed && cap >= 0 && cap != sat_mul(n->gpu_count, replicas))
            warn(n->warning,
                 "capacity %" PRId64 " is not gpu.count %" PRId64 " x replicas %" PRId64, cap,
                 n->gpu_count, replicas);
        return;
    }
    if (cap < 0) {
        /* No GPU advertised: a CPU-only node has none; a node that
         * labels a product but advertises nothing is unknown. */
        if (n->vendor == GI_VENDOR_UNKNOWN && n->product[0] == '\0')
            n->physical_gpus = 0;
        return;
    }
    if (mixed && mig_sum > 0)
        return; /* GPUs in MIG mode are hidden behind their devices */
    if (replicas > 1) {
        if (cap % replicas == 0)
            n->physical_gpus = cap / replicas;
        else
            warn(n->warning, "capacity %" PRId64 " not a multiple of replicas %" PRId64, cap,
                 replicas);
        return;
    }
    if (!n->shared)
        n->physical_gpus = cap;
}

static int parse_node(struct ctx *c, const json_t *item, struct k8s_node *n)
{
    const json_t *md, *spec, *status, *labels, *map, *conds, *v;
    char rev[K8S_VALUE_LEN], major[K8S_VALUE_LEN], minor[K8S_VALUE_LEN];
    int st = GI_OK;

    n->ready = -1;
    n->cpu_milli = -1;
    n->memory_bytes = -1;
    if ((st = item_kind(c, item, "Node")) != GI_OK)
        return st;
    md = get_obj(c, item, "metadata", "metadata", &st);
    spec = st == GI_OK ? get_obj(c, item, "spec", "spec", &st) : NULL;
    status = st == GI_OK ? get_obj(c, item, "status", "status", &st) : NULL;
    labels = st == GI_OK ? get_obj(c, md, "labels", "metadata.labels", &st) : NULL;
    if (st != GI_OK)
        return st;
    if ((st = get_str(c, md, "name", "metadata.name", n->name, sizeof n->name)) != GI_OK ||
        (st = get_str(c, md, "uid", "metadata.uid", n->uid, sizeof n->uid)) != GI_OK ||
        (st = get_str(c, spec, "providerID", "spec.providerID", n->provider_id,
                      sizeof n->provider_id)) != GI_OK)
        return st;
    if (n->name[0] == '\0')
        return fail(c, GI_INVALID, "metadata.name: missing");
    node_labels_json(n, labels);
    v = spec ? json_object_get(spec, "unschedulable") : NULL;
    n->unschedulable = json_is_true(v);
    {
        const char *sep = strstr(n->provider_id, "://");
        if (sep != NULL && (size_t)(sep - n->provider_id) < sizeof n->cloud) {
            memcpy(n->cloud, n->provider_id, (size_t)(sep - n->provider_id));
            n->cloud[sep - n->provider_id] = '\0';
        }
    }

    /* Placement and identity labels, current names first. */
    if ((st = node_label(c, labels, "kubernetes.io/hostname", n->hostname, sizeof n->hostname)) !=
            GI_OK ||
        (st = node_label(c, labels, "topology.kubernetes.io/region", n->region,
                         sizeof n->region)) != GI_OK ||
        (!n->region[0] && (st = node_label(c, labels, "failure-domain.beta.kubernetes.io/region",
                                           n->region, sizeof n->region)) != GI_OK) ||
        (st = node_label(c, labels, "topology.kubernetes.io/zone", n->zone, sizeof n->zone)) !=
            GI_OK ||
        (!n->zone[0] && (st = node_label(c, labels, "failure-domain.beta.kubernetes.io/zone",
                                         n->zone, sizeof n->zone)) != GI_OK) ||
        (st = node_label(c, labels, "node.kubernetes.io/instance-type", n->instance_type,
                         sizeof n->instance_type)) != GI_OK ||
        (!n->instance_type[0] &&
         (st = node_label(c, labels, "beta.kubernetes.io/instance-type", n->instance_type,
                          sizeof n->instance_type)) != GI_OK))
        return st;

    /* GPU Feature Discovery. */
    if ((st = node_label(c, labels, "nvidia.com/gpu.product", n->product, sizeof n->product)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/gpu.family", n->family, sizeof n->family)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/gpu.machine", n->machine, sizeof n->machine)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/gpu.sharing-strategy", n->sharing_strategy,
                         sizeof n->sharing_strategy)) != GI_OK ||
        (st = node_label(c, labels, "nvidia.com/mig.strategy", n->mig_strategy,
                         sizeof n->mig_strategy)) != GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/gpu.count", &n->gpu_count)) != GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/gpu.memory", &n->gpu_memory_mb)) != GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/gpu.replicas", &n->replicas)) != GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/gpu.compute.major", &n->compute_major)) !=
            GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/gpu.compute.minor", &n->compute_minor)) !=
            GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/cuda.driver.major", &n->driver_major)) !=
            GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/cuda.driver.minor", &n->driver_minor)) !=
            GI_OK ||
        (st = node_label_int(c, n, labels, "nvidia.com/cuda.driver.rev", &n->driver_rev)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/cuda.driver.major", major, sizeof major)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/cuda.driver.minor", minor, sizeof minor)) !=
            GI_OK ||
        (st = node_label(c, labels, "nvidia.com/cuda.driver.rev", rev, sizeof rev)) != GI_OK)
        return st;
    if (labels != NULL && (st = node_mig_labels(c, n, labels)) != GI_OK)
        return st;
    /* The driver version as printed by nvidia-smi keeps the revision's
     * leading zero ("535.104.05"), so it is built from the label text. */
    if (n->driver_major >= 0 && n->driver_minor >= 0) {
        if (n->driver_rev >= 0)
            snprintf(n->driver, sizeof n->driver, "%.20s.%.20s.%.20s", major, minor, rev);
        else
            snprintf(n->driver, sizeof n->driver, "%.20s.%.20s", major, minor);
    }
    if (n->product[0] != '\0') {
        n->vendor = GI_VENDOR_NVIDIA;
        node_product(n);
    }

    /* Capacity, allocatable, conditions. */
    map = get_obj(c, status, "capacity", "status.capacity", &st);
    if (st != GI_OK || (map && (st = node_resources(c, n, map, true)) != GI_OK))
        return st;
    map = get_obj(c, status, "allocatable", "status.allocatable", &st);
    if (st != GI_OK || (map && (st = node_resources(c, n, map, false)) != GI_OK))
        return st;
    conds = get_arr(c, status, "conditions", "status.conditions", &st);
    if (st != GI_OK)
        return st;
    for (size_t i = 0; conds && i < json_array_size(conds); i++) {
        const json_t *cond = json_array_get(conds, i);
        const json_t *type = json_object_get(cond, "type");
        const json_t *cst = json_object_get(cond, "status");
        if (!json_is_object(cond))
            return fail(c, GI_INVALID, "status.conditions[%zu]: not an object", i);
        if (!json_is_string(type) || strcmp(json_string_value(type), "Ready") != 0)
            continue;
        if (!json_is_string(cst))
            return fail(c, GI_INVALID, "status.conditions[%zu].status: not a string", i);
        n->ready = strcmp(json_string_value(cst), "True") == 0    ? 1
                   : strcmp(json_string_value(cst), "False") == 0 ? 0
                                                                  : -1;
    }
    node_derive(n);
    return GI_OK;
}

int k8s_parse_node_list(const char *data, size_t len, struct k8s_node_list *out, char *err,
                        size_t errlen)
{
    struct ctx c = {err, errlen, -1};
    json_t *root = NULL;
    const json_t *items = NULL;
    int st;

    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    st = load_list(&c, data, len, "NodeList", &root, &items, &out->meta, &out->status);
    if (st != GI_OK)
        goto cleanup;
    if (json_array_size(items) > 0) {
        out->items = calloc(json_array_size(items), sizeof *out->items);
        if (out->items == NULL) {
            st = fail(&c, GI_INTERNAL, "out of memory");
            goto cleanup;
        }
    }
    for (size_t i = 0; i < json_array_size(items); i++) {
        c.item = (long)i;
        if ((st = parse_node(&c, json_array_get(items, i), &out->items[i])) != GI_OK)
            goto cleanup;
        out->nitems++;
    }
cleanup:
    json_decref(root);
    return st;
}

void k8s_node_list_free(struct k8s_node_list *l)
{
    if (l == NULL)
        return;
    free(l->items);
    l->items = NULL;
    l->nitems = 0;
}

/* ---- Pods ------------------------------------------------------------ */

/* Finds or adds the container resource entry for name. */
static struct k8s_pod_res *container_res(struct ctx *c, struct k8s_container *k, const char *field,
                                         const char *name, int *st)
{
    for (size_t i = 0; i < k->nres; i++)
        if (strcmp(k->res[i].name, name) == 0)
            return &k->res[i];
    if (k->nres == K8S_MAX_CONTAINER_RES) {
        *st = fail(c, GI_TOO_LARGE, "%s: more than %d GPU resources", field, K8S_MAX_CONTAINER_RES);
        return NULL;
    }
    if (strlen(name) >= K8S_RES_LEN) {
        *st = fail(c, GI_TOO_LARGE, "%s: resource name \"%.64s…\" too long", field, name);
        return NULL;
    }
    struct k8s_pod_res *r = &k->res[k->nres++];
    memcpy(r->name, name, strlen(name) + 1);
    r->limit = -1;
    r->request = -1;
    return r;
}

/* Reads the GPU entries of resources.limits or resources.requests. */
static int container_map(struct ctx *c, struct k8s_container *k, const json_t *resources,
                         const char *field, bool limits)
{
    char sub[128];
    const char *key;
    const json_t *map;
    json_t *v;
    int st = GI_OK;

    snprintf(sub, sizeof sub, "%s.resources.%s", field, limits ? "limits" : "requests");
    map = get_obj(c, resources, limits ? "limits" : "requests", sub, &st);
    if (st != GI_OK || map == NULL)
        return st;
    json_object_foreach((json_t *)map, key, v) {
        enum gi_vendor vendor;
        struct k8s_pod_res *r;
        int64_t count;

        if (resource_kind(key, &vendor) == RES_OTHER)
            continue;
        if ((st = gpu_count(c, v, sub, key, &count)) != GI_OK)
            return st;
        if ((r = container_res(c, k, sub, key, &st)) == NULL)
            return st;
        if (limits)
            r->limit = count;
        else
            r->request = count;
    }
    return GI_OK;
}

static int parse_container(struct ctx *c, struct k8s_pod *p, const json_t *obj, const char *field,
                           struct k8s_container *k)
{
    char sub[96];
    const json_t *resources;
    int st = GI_OK;

    if (!json_is_object(obj))
        return fail(c, GI_INVALID, "%s: not an object", field);
    snprintf(sub, sizeof sub, "%s.name", field);
    if ((st = get_str(c, obj, "name", sub, k->name, sizeof k->name)) != GI_OK)
        return st;
    if (k->init) {
        const json_t *rp = json_object_get(obj, "restartPolicy");
        k->sidecar = json_is_string(rp) && strcmp(json_string_value(rp), "Always") == 0;
    }
    snprintf(sub, sizeof sub, "%s.resources", field);
    resources = get_obj(c, obj, "resources", sub, &st);
    if (st != GI_OK)
        return st;
    if ((st = container_map(c, k, resources, field, true)) != GI_OK ||
        (st = container_map(c, k, resources, field, false)) != GI_OK)
        return st;
    /* Extended resources are not overcommitted: a request, if given, must
     * equal the limit, and a limit alone sets the request. */
    k->gpus = 0;
    k->mig_devices = 0;
    for (size_t i = 0; i < k->nres; i++) {
        struct k8s_pod_res *r = &k->res[i];
        enum gi_vendor vendor;
        int64_t eff = r->limit >= 0 ? r->limit : r->request;
        if (r->limit < 0)
            warn(p->warning, "%s: %s requested without a limit", field, r->name);
        else if (r->request >= 0 && r->request != r->limit)
            warn(p->warning, "%s: %s request %" PRId64 " differs from limit %" PRId64, field,
                 r->name, r->request, r->limit);
        if (resource_kind(r->name, &vendor) == RES_MIG)
            k->mig_devices = sat_add(k->mig_devices, eff);
        else
            k->gpus = sat_add(k->gpus, eff);
    }
    return GI_OK;
}

/* Effective pod demand for one measure (0: GPUs, 1: MIG devices), as the
 * scheduler computes it, sidecars included. */
static int64_t pod_effective(const struct k8s_pod *p, int which)
{
    int64_t app = 0, sidecars = 0, init_max = 0;

    for (size_t i = 0; i < p->ncontainers; i++) {
        const struct k8s_container *k = &p->containers[i];
        int64_t v = which == 0 ? k->gpus : k->mig_devices;
        if (!k->init)
            app = sat_add(app, v);
        else if (k->sidecar)
            sidecars = sat_add(sidecars, v);
        else if (sat_add(v, sidecars) > init_max)
            init_max = sat_add(v, sidecars);
    }
    return sat_add(app, sidecars) > init_max ? sat_add(app, sidecars) : init_max;
}

static int pod_labels(struct ctx *c, struct k8s_pod *p, const json_t *labels)
{
    const char *key, *why;
    json_t *v;
    int st;

    json_object_foreach((json_t *)labels, key, v) {
        struct k8s_label *l;
        if ((st = check_text(v, SIZE_MAX, &why)) != GI_OK)
            return fail(c, st, "metadata.labels[%.80s]: %s", key, why);
        if (!gi_text_ok(key))
            return fail(c, GI_INVALID, "metadata.labels: bad key \"%.80s\"", key);
        /* The copy is bounded: what does not fit is dropped, not failed. */
        if (p->nlabels == K8S_MAX_POD_LABELS || strlen(key) >= K8S_KEY_LEN ||
            json_string_length(v) >= K8S_VALUE_LEN) {
            p->labels_truncated = true;
            continue;
        }
        l = &p->labels[p->nlabels++];
        memcpy(l->key, key, strlen(key) + 1);
        memcpy(l->value, json_string_value(v), json_string_length(v) + 1);
    }
    return GI_OK;
}

static int pod_owner(struct ctx *c, struct k8s_pod *p, const json_t *md)
{
    const json_t *owners, *pick = NULL;
    int st = GI_OK;

    owners = get_arr(c, md, "ownerReferences", "metadata.ownerReferences", &st);
    if (st != GI_OK || owners == NULL)
        return st;
    /* The controller owner if there is one, else the first. */
    for (size_t i = 0; i < json_array_size(owners); i++) {
        const json_t *o = json_array_get(owners, i);
        if (!json_is_object(o))
            return fail(c, GI_INVALID, "metadata.ownerReferences[%zu]: not an object", i);
        if (pick == NULL || (json_is_true(json_object_get(o, "controller")) &&
                             !json_is_true(json_object_get(pick, "controller"))))
            pick = o;
    }
    if (pick == NULL)
        return GI_OK;
    if ((st = get_str(c, pick, "kind", "metadata.ownerReferences.kind", p->owner_kind,
                      sizeof p->owner_kind)) != GI_OK)
        return st;
    return get_str(c, pick, "name", "metadata.ownerReferences.name", p->owner_name,
                   sizeof p->owner_name);
}

static int parse_pod(struct ctx *c, const json_t *item, struct k8s_pod *p)
{
    static const struct {
        const char *key, *field;
        bool init;
    } lists[] = {{"initContainers", "spec.initContainers", true},
                 {"containers", "spec.containers", false}};
    const json_t *md, *spec, *status, *labels;
    char start[64];
    int st = GI_OK;

    p->start_time = -1;
    if ((st = item_kind(c, item, "Pod")) != GI_OK)
        return st;
    md = get_obj(c, item, "metadata", "metadata", &st);
    spec = st == GI_OK ? get_obj(c, item, "spec", "spec", &st) : NULL;
    status = st == GI_OK ? get_obj(c, item, "status", "status", &st) : NULL;
    labels = st == GI_OK ? get_obj(c, md, "labels", "metadata.labels", &st) : NULL;
    if (st != GI_OK)
        return st;
    if ((st = get_str(c, md, "namespace", "metadata.namespace", p->namespace_,
                      sizeof p->namespace_)) != GI_OK ||
        (st = get_str(c, md, "name", "metadata.name", p->name, sizeof p->name)) != GI_OK ||
        (st = get_str(c, md, "uid", "metadata.uid", p->uid, sizeof p->uid)) != GI_OK ||
        (st = get_str(c, spec, "nodeName", "spec.nodeName", p->node_name, sizeof p->node_name)) !=
            GI_OK ||
        (st = get_str(c, status, "phase", "status.phase", p->phase, sizeof p->phase)) != GI_OK ||
        (st = get_str(c, status, "startTime", "status.startTime", start, sizeof start)) != GI_OK)
        return st;
    if (p->name[0] == '\0')
        return fail(c, GI_INVALID, "metadata.name: missing");
    if (start[0] != '\0' && gi_time_parse(start, &p->start_time) != GI_OK)
        return fail(c, GI_INVALID, "status.startTime: not a time \"%s\"", start);
    if ((labels && (st = pod_labels(c, p, labels)) != GI_OK) || (st = pod_owner(c, p, md)) != GI_OK)
        return st;

    for (size_t l = 0; l < 2; l++) {
        const json_t *arr = get_arr(c, spec, lists[l].key, lists[l].field, &st);
        if (st != GI_OK)
            return st;
        for (size_t i = 0; arr && i < json_array_size(arr); i++) {
            char field[64];
            struct k8s_container *k;
            snprintf(field, sizeof field, "%s[%zu]", lists[l].field, i);
            if (p->ncontainers == K8S_MAX_CONTAINERS)
                return fail(c, GI_TOO_LARGE, "spec: more than %d containers", K8S_MAX_CONTAINERS);
            k = &p->containers[p->ncontainers++];
            k->init = lists[l].init;
            if ((st = parse_container(c, p, json_array_get(arr, i), field, k)) != GI_OK)
                return st;
        }
    }
    p->gpus = pod_effective(p, 0);
    p->mig_devices = pod_effective(p, 1);
    return GI_OK;
}

int k8s_parse_pod_list(const char *data, size_t len, struct k8s_pod_list *out, char *err,
                       size_t errlen)
{
    struct ctx c = {err, errlen, -1};
    json_t *root = NULL;
    const json_t *items = NULL;
    int st;

    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    st = load_list(&c, data, len, "PodList", &root, &items, &out->meta, &out->status);
    if (st != GI_OK)
        goto cleanup;
    if (json_array_size(items) > 0) {
        out->items = calloc(json_array_size(items), sizeof *out->items);
        if (out->items == NULL) {
            st = fail(&c, GI_INTERNAL, "out of memory");
            goto cleanup;
        }
    }
    for (size_t i = 0; i < json_array_size(items); i++) {
        c.item = (long)i;
        if ((st = parse_pod(&c, json_array_get(items, i), &out->items[i])) != GI_OK)
            goto cleanup;
        out->nitems++;
    }
cleanup:
    json_decref(root);
    return st;
}

void k8s_pod_list_free(struct k8s_pod_list *l)
{
    if (l == NULL)
        return;
    free(l->items);
    l->items = NULL;
    l->nitems = 0;
}

const char *k8s_pod_label(const struct k8s_pod *p, const char *key)
{
    for (size_t i = 0; i < p->nlabels; i++)
        if (strcmp(p->labels[i].key, key) == 0)
            return p->labels[i].value;
    return NULL;
}
