/* Pure parsing of what a request's headers carry: the request target's
 * path (percent-decoding, canonical ids) and media types. No I/O, no
 * libmicrohttpd; each is fuzzed by fuzz/fuzz_http.c. */
#ifndef GI_URI_H
#define GI_URI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Percent-decodes n bytes of in into out (capacity cap, NUL-terminated).
 * False for a broken escape, any control byte (decoded or not, so "%00"
 * cannot cut a path short), invalid UTF-8, or a result that does not
 * fit; out is then unspecified. */
bool uri_decode(const char *in, size_t n, char *out, size_t cap);
/* True when the n bytes at s are a canonical decimal id (digits only, no
 * sign, no leading zero) from 1 to INT64_MAX, stored in *out. */
bool uri_canonical_id(const char *s, size_t n, int64_t *out);
/* True when the Content-Type value ct is the media type `type`
 * (case-insensitive), optionally followed by ";name=value" parameters of
 * which a charset, if present, names UTF-8. ct may be NULL (false). */
bool uri_media_type_is(const char *ct, const char *type);

#endif
