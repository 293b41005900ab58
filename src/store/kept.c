/* Kept answers; see kept.h. */
#include "store/kept.h"
#include "core/util.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEPT_N 64

struct kept_entry {
    const struct store *st;
    const char *area; /* a string constant of the caller's: compared by address */
    char key[KEPT_KEY_MAX];
    struct kept_rev rev;
    int64_t read_at;
    json_t *v;
};

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept_entry kept[KEPT_N];
static size_t kept_next; /* the slot replaced next */

static bool same(const struct kept_entry *e, const struct store *st, const char *area,
                 const char *key)
{
    return e->v && e->st == st && e->area == area && strcmp(e->key, key) == 0;
}

json_t *kept_get(const struct store *st, const char *area, const char *key,
                 const struct kept_rev *rev, int64_t now, int64_t ttl)
{
    json_t *hit = NULL;

    pthread_mutex_lock(&kept_mu);
    for (size_t i = 0; i < KEPT_N && !hit; i++) {
        const struct kept_entry *e = &kept[i];
        if (same(e, st, area, key) && e->rev.a == rev->a && e->rev.b == rev->b &&
            now - e->read_at < ttl && e->read_at <= now)
            hit = json_deep_copy(e->v);
    }
    pthread_mutex_unlock(&kept_mu);
    return hit;
}

void kept_put(const struct store *st, const char *area, const char *key, const struct kept_rev *rev,
              int64_t read_at, const json_t *v)
{
    json_t *copy = strlen(key) < KEPT_KEY_MAX ? json_deep_copy(v) : NULL;
    struct kept_entry *e = NULL;

    if (copy == NULL)
        return;
    pthread_mutex_lock(&kept_mu);
    for (size_t i = 0; i < KEPT_N && !e; i++)
        if (same(&kept[i], st, area, key))
            e = &kept[i];
    if (e == NULL) {
        e = &kept[kept_next];
        kept_next = (kept_next + 1) % KEPT_N;
    }
    json_decref(e->v);
    e->st = st;
    e->area = area;
    gi_strlcpy(e->key, key, sizeof e->key);
    e->rev = *rev;
    e->read_at = read_at;
    e->v = copy;
    pthread_mutex_unlock(&kept_mu);
}

bool kept_key(char *out, size_t len, size_t n, const char *const *parts)
{
    size_t at = 0;

    if (len == 0)
        return false;
    /* Each part as its length, ':' and its bytes ("-" for NULL), so that
     * no two lists of parts give the same key. */
    for (size_t i = 0; i < n; i++) {
        size_t k = parts[i] ? strlen(parts[i]) : 0;
        int w =
            parts[i] ? snprintf(out + at, len - at, "%zu:", k) : snprintf(out + at, len - at, "-");
        if (w < 0 || (size_t)w >= len - at || k >= len - at - (size_t)w)
            return false;
        at += (size_t)w;
        memcpy(out + at, parts[i] ? parts[i] : "", k);
        at += k;
    }
    out[at] = '\0';
    return true;
}

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void kept_scope_text(const struct store_scope *sc, char *out, size_t len)
{
    int64_t ids[GI_TOKEN_DCS_MAX];
    size_t at = 0;
    int n = sc ? sc->n : 0;

    if (len == 0)
        return;
    out[0] = '\0';
    if (n > GI_TOKEN_DCS_MAX)
        n = GI_TOKEN_DCS_MAX;
    if (n > 0)
        memcpy(ids, sc->dcs, (size_t)n * sizeof ids[0]);
    qsort(ids, (size_t)n, sizeof ids[0], id_cmp);
    for (int i = 0; i < n && at < len; i++) {
        int w = snprintf(out + at, len - at, ",%lld", (long long)ids[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}
