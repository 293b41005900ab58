/* The body of a FusionInventory / GLPI agent's POST and of the reply:
 * zlib (RFC 1950, the agents' default), gzip (RFC 1952), raw deflate or
 * plain XML. Decoding is bounded by the caller's maximum, so a small body
 * that inflates without end stops there. See glpi.h. */
#include "core/status.h"
#include "parse/glpi.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* Bytes inflated per step, and the first allocation. */
#define CHUNK 65536

static void body_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void body_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *enc_name(enum glpi_encoding enc)
{
    return enc == GLPI_ZLIB ? "zlib" : enc == GLPI_GZIP ? "gzip" : "deflate";
}

/* True when the body's first non-blank byte (after a UTF-8 BOM) is '<'. */
static bool looks_like_xml(const unsigned char *b, size_t len)
{
    size_t i = 0;

    if (len >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf)
        i = 3;
    while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    return i < len && b[i] == '<';
}

enum glpi_encoding glpi_detect(const void *body, size_t len, const char *content_type)
{
    const unsigned char *b = body;

    if (len >= 2 && (b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && ((b[0] << 8) | b[1]) % 31 == 0)
        return GLPI_ZLIB;
    if (len >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08)
        return GLPI_GZIP;
    if (content_type && strncasecmp(content_type, "application/x-compress-zlib", 27) == 0 &&
        len > 0 && !looks_like_xml(b, len))
        return GLPI_DEFLATE;
    return GLPI_PLAIN;
}

int glpi_decode(const void *body, size_t len, enum glpi_encoding enc, size_t max, char **out,
                size_t *outlen, char *err, size_t errlen)
{
    z_stream z;
    char *buf = NULL, *nb;
    size_t cap, n = 0;
    int zr = Z_OK, rc = GI_INVALID, bits;

    *out = NULL;
    *outlen = 0;
    if (enc == GLPI_PLAIN) {
        if (len > max) {
            body_fail(err, errlen, "the body exceeds %zu bytes", max);
            return GI_TOO_LARGE;
        }
        if ((buf = malloc(len + 1)) == NULL)
            return GI_INTERNAL;
        memcpy(buf, body, len);
        buf[len] = '\0';
        *out = buf;
        *outlen = len;
        return GI_OK;
    }
    if (len > UINT32_MAX) {
        body_fail(err, errlen, "the body exceeds %u bytes", UINT32_MAX);
        return GI_TOO_LARGE;
    }
    bits = enc == GLPI_ZLIB ? 15 : enc == GLPI_GZIP ? 15 + 16 : -15;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, bits) != Z_OK)
        return GI_INTERNAL;
    cap = CHUNK < max ? CHUNK : max;
    if ((buf = malloc(cap + 1)) == NULL) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    z.next_in = (Bytef *)(uintptr_t)body;
    z.avail_in = (uInt)len;
    while (zr != Z_STREAM_END) {
        if (n == cap) {
            /* Full: grow up to max, and past it stop. */
            if (cap >= max) {
                body_fail(err, errlen, "the decoded body exceeds %zu bytes", max);
                rc = GI_TOO_LARGE;
                goto cleanup;
            }
            cap = cap > max / 2 ? max : cap * 2;
            if ((nb = realloc(buf, cap + 1)) == NULL) {
                rc = GI_INTERNAL;
                goto cleanup;
            }
            buf = nb;
        }
        z.next_out = (Bytef *)buf + n;
        z.avail_out = (uInt)(cap - n < UINT32_MAX ? cap - n : UINT32_MAX);
        zr = inflate(&z, Z_NO_FLUSH);
        n = (size_t)(z.next_out - (Bytef *)buf);
        if (zr == Z_MEM_ERROR) {
            rc = GI_INTERNAL;
            goto cleanup;
        }
        if (zr == Z_BUF_ERROR || (zr == Z_OK && z.avail_in == 0 && n < cap)) {
            /* No progress possible, or all input used without the end. */
            body_fail(err, errlen, "the %s body is truncated", enc_name(enc));
            goto cleanup;
        }
        if (zr != Z_OK && zr != Z_STREAM_END) {
            body_fail(err, errlen, "the %s body is corrupt: %s", enc_name(enc),
                      z.msg ? z.msg : "bad data");
            goto cleanup;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    buf = NULL;
    rc = GI_OK;
cleanup:
    inflateEnd(&z);
    free(buf);
    return rc;
}

int glpi_encode(const char *text, size_t len, enum glpi_encoding enc, unsigned char **out,
                size_t *outlen)
{
    z_stream z;
    unsigned char *buf = NULL;
    uLong bound;
    int rc = GI_INTERNAL;

    *out = NULL;
    *outlen = 0;
    if (enc == GLPI_PLAIN) {
        if ((buf = malloc(len + 1)) == NULL)
            return GI_INTERNAL;
        memcpy(buf, text, len);
        buf[len] = '\0';
        *out = buf;
        *outlen = len;
        return GI_OK;
    }
    if (len > UINT32_MAX / 2)
        return GI_INTERNAL;
    memset(&z, 0, sizeof z);
    /* Default level: the zlib header reads 78 9c, which is what the
     * agent looks for in a reply. */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, enc == GLPI_GZIP ? 15 + 16 : 15, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return GI_INTERNAL;
    bound = deflateBound(&z, (uLong)len) + 32;
    if ((buf = malloc(bound)) == NULL)
        goto cleanup;
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)len;
    z.next_out = buf;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        goto cleanup;
    *out = buf;
    *outlen = (size_t)z.total_out;
    buf = NULL;
    rc = GI_OK;
cleanup:
    deflateEnd(&z);
    free(buf);
    return rc;
}
