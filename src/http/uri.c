/* Request target and media type parsing; see uri.h. */
#include "http/uri.h"
#include "core/status.h"
#include "core/util.h"

#include <string.h>
#include <strings.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool uri_decode(const char *in, size_t n, char *out, size_t cap)
{
    size_t j = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%') {
            if (i + 2 >= n || hexval(in[i + 1]) < 0 || hexval(in[i + 2]) < 0)
                return false;
            c = (unsigned char)(hexval(in[i + 1]) * 16 + hexval(in[i + 2]));
            i += 2;
        }
        if (c < 0x20 || c == 0x7f || j + 1 >= cap)
            return false;
        out[j++] = (char)c;
    }
    if (cap == 0)
        return false;
    out[j] = '\0';
    return gi_text_ok(out);
}

bool uri_canonical_id(const char *s, size_t n, int64_t *out)
{
    char num[24];

    if (n == 0 || n >= sizeof num || s[0] == '0')
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    memcpy(num, s, n);
    num[n] = '\0';
    return gi_parse_int64(num, 1, INT64_MAX, out) == GI_OK;
}

bool uri_media_type_is(const char *ct, const char *type)
{
    size_t tl = strlen(type);
    char params[256];
    char *p;

    if (ct == NULL || strncasecmp(ct, type, tl) != 0)
        return false;
    ct += tl;
    ct += strspn(ct, " \t");
    if (*ct == '\0')
        return true;
    if (*ct != ';' || !gi_strlcpy(params, ct, sizeof params))
        return false;
    /* Each parameter is name=value (value possibly quoted); only charset
     * is judged, and it must name UTF-8. */
    for (p = params; *p == ';';) {
        char *name = p + 1, *eq, *end = strchr(name, ';'), *val;
        size_t vl;
        if (end)
            *end = '\0';
        name += strspn(name, " \t");
        if ((eq = strchr(name, '=')) == NULL)
            return false;
        val = eq + 1;
        while (eq > name && (eq[-1] == ' ' || eq[-1] == '\t'))
            eq--;
        *eq = '\0';
        val += strspn(val, " \t");
        vl = strcspn(val, " \t");
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val++;
            vl -= 2;
        }
        val[vl] = '\0';
        if (strcasecmp(name, "charset") == 0 && strcasecmp(val, "utf-8") != 0 &&
            strcasecmp(val, "utf8") != 0)
            return false;
        if (end == NULL)
            break;
        *end = ';';
        p = end;
    }
    return true;
}
