/* Cloud instances; see cloud.h. */
#include "parse/cloud.h"

#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cloud_instances_clear(struct cloud_instance *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        for (size_t t = 0; t < v[i].ntags; t++) {
            free(v[i].tags[t].key);
            free(v[i].tags[t].value);
        }
        free(v[i].tags);
        v[i].tags = NULL;
        v[i].ntags = 0;
    }
}

void cloud_vnote(size_t *count, char *first, size_t len, const char *fmt, va_list ap)
{
    if ((*count)++ == 0)
        vsnprintf(first, len, fmt, ap);
}

static void note(size_t *count, char *first, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void note(size_t *count, char *first, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cloud_vnote(count, first, len, fmt, ap);
    va_end(ap);
}

const char *cloud_text(const json_t *obj, const char *key, size_t *count, char *first, size_t len,
                       const char *what, const char *who)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_string(v) || !gi_text_ok(json_string_value(v))) {
        note(count, first, len, "%s %.60s: %.40s is not text", what, who, key);
        return NULL;
    }
    return json_string_length(v) ? json_string_value(v) : NULL;
}

void cloud_copy(char *dst, size_t len, const char *src)
{
    if (src && !gi_strlcpy(dst, src, len))
        dst[0] = '\0';
}

int cloud_tags_set(struct cloud_instance *ci, const json_t *tags, const char *what,
                   const char *field, const char *item, size_t *count, char *first, size_t len)
{
    const char *k;
    json_t *v;

    if (tags == NULL || json_is_null(tags))
        return GI_OK;
    if (!json_is_object(tags)) {
        note(count, first, len, "%s %.60s: %.40s is not an object", what, ci->name, field);
        return GI_OK;
    }
    if (json_object_size(tags) == 0)
        return GI_OK;
    ci->tags = calloc(json_object_size(tags), sizeof *ci->tags);
    if (ci->tags == NULL)
        return GI_INTERNAL;
    json_object_foreach((json_t *)tags, k, v) {
        struct cloud_tag *t = &ci->tags[ci->ntags];
        if (!json_is_string(v) || !gi_text_ok(k) || !gi_text_ok(json_string_value(v))) {
            note(count, first, len, "%s %.60s: %s %.40s is not text", what, ci->name, item, k);
            continue;
        }
        t->key = strdup(k);
        t->value = strdup(json_string_value(v));
        if (!t->key || !t->value) {
            free(t->key);
            free(t->value);
            return GI_INTERNAL;
        }
        ci->ntags++;
    }
    return GI_OK;
}
