/* Credentials: API tokens (random, shown once, stored as a BLAKE2b hash),
 * dashboard passwords (Argon2id) and session cookies. */
#ifndef GI_AUTH_H
#define GI_AUTH_H

#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

#define AUTH_TOKEN_LEN 48   /* "gpi_" + 43 base64url chars + NUL fits */
#define AUTH_HASH_LEN 65    /* hex of 32 bytes + NUL */
#define AUTH_PWHASH_LEN 128 /* crypto_pwhash_STRBYTES */
#define AUTH_COOKIE "gpuinv_session"

struct req;

/* Initializes libsodium; call once before anything else here. */
int auth_init(void);
/* Fills token with a new random secret ("gpi_..."). */
void auth_token_new(char token[AUTH_TOKEN_LEN]);
/* Hex BLAKE2b-256 of a secret; the only form in which secrets are stored. */
void auth_hash(const char *secret, char out[AUTH_HASH_LEN]);
int auth_password_hash(const char *password, char out[AUTH_PWHASH_LEN]);
bool auth_password_ok(const char *stored, const char *password);
/* Does the work of a password check that always fails, so that an unknown
 * user name costs as much as a wrong password and the time of a reply
 * does not tell which names exist. */
void auth_password_dummy(const char *password);
/* Resolves the caller of r from its bearer token or session cookie (or,
 * on a route that admits it, route_basic_auth, HTTP Basic credentials
 * whose password is a token) into r->who; GI_OK, GI_NOT_FOUND (no or
 * unknown credentials), or a store error. */
int auth_resolve(struct req *r);

#endif
