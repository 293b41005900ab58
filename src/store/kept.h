/* Kept answers: small read results that a process keeps and hands out
 * again while the revision they were read at still holds. A revision is
 * two numbers the caller reads from the database in the same snapshot as
 * the answer (a counter every write moves, a newest time, a row count);
 * an answer is reused only at exactly that revision and for at most ttl
 * seconds, so a write through any replica is seen at the next read that
 * finds the revision moved, and one that moves no revision at all is
 * seen after ttl seconds. The cache is per process, bounded (oldest
 * replaced first), and safe to use from every request thread. */
#ifndef GI_KEPT_H
#define GI_KEPT_H

#include "core/model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_scope;

struct kept_rev {
    int64_t a, b;
};

/* The longest key kept; a longer one is never kept. */
#define KEPT_KEY_MAX 1024

/* A copy of the answer kept for (st, area, key) at rev, read no earlier
 * than now - ttl; NULL when there is none. */
json_t *kept_get(const struct store *st, const char *area, const char *key,
                 const struct kept_rev *rev, int64_t now, int64_t ttl);
/* Keeps a copy of v as the answer for (st, area, key) at rev, read at
 * read_at, replacing an older answer to the same question. */
void kept_put(const struct store *st, const char *area, const char *key, const struct kept_rev *rev,
              int64_t read_at, const json_t *v);
/* Builds a key from n strings (NULL kept apart from ""); false when the
 * result does not fit in len bytes. */
bool kept_key(char *out, size_t len, size_t n, const char *const *parts);
/* The text a key holds for the data centers of sc (NULL or n 0: every
 * data center, ""): their ids in ascending order, each after a comma, so
 * that two scopes of the same set give the same text and two of
 * different sets never do. The scope's text is as long as
 * KEPT_SCOPE_TEXT_MAX at most; len must be at least that. */
#define KEPT_SCOPE_TEXT_MAX (1 + GI_TOKEN_DCS_MAX * 21)
void kept_scope_text(const struct store_scope *sc, char *out, size_t len);

#endif
