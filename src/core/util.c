/* Shared helpers: time, number parsing under the C locale, bounded strings. */
#define _GNU_SOURCE
#include "core/util.h"
#include "core/status.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int64_t gi_now(void) { return (int64_t)time(NULL); }

void gi_time_format(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (len == 0)
        return;
    /* Out of range for the format (or for gmtime): an empty string rather
     * than whatever strftime left behind. */
    if (gmtime_r(&tt, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        buf[0] = '\0';
}

/* Reads exactly n digits at *p into *out, advancing *p. */
static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Days in month mo (1-12) of year y, proleptic Gregorian. */
static int days_in_month(int y, int mo)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

    return mo == 2 && leap ? 29 : days[mo - 1];
}

int gi_time_parse(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    int64_t t;
    const char *p = s;

    if (gi_parse_int64(s, 0, INT64_C(253402300799), out) == GI_OK)
        return GI_OK;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
        return GI_INVALID;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
        !digits(&p, 2, &sec))
        return GI_INVALID;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return GI_INVALID;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
            return GI_INVALID;
    } else {
        return GI_INVALID;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 60 || oh > 23 || om > 59)
        return GI_INVALID;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
    /* The same range as unix seconds: an offset must not carry the instant
     * before 1970 or past the end of year 9999. */
    if (t < 0 || t > INT64_C(253402300799))
        return GI_INVALID;
    *out = t;
    return GI_OK;
}

int gi_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end = NULL;
    long long v;

    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return GI_INVALID;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return GI_INVALID;
    *out = (int64_t)v;
    return GI_OK;
}

int gi_parse_double(const char *s, double min, double max, double *out)
{
    char *end = NULL;
    double v;

    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return GI_INVALID;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < min || v > max)
        return GI_INVALID;
    *out = v;
    return GI_OK;
}

bool gi_fmt(char *dst, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (len == 0)
        return false;
    va_start(ap, fmt);
    n = vsnprintf(dst, len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        dst[0] = '\0';
        return false;
    }
    return (size_t)n < len;
}

bool gi_strlcpy(char *dst, const char *src, size_t len)
{
    size_t n = strlen(src);

    if (len == 0)
        return false;
    if (n >= len) {
        memcpy(dst, src, len - 1);
        dst[len - 1] = '\0';
        return false;
    }
    memcpy(dst, src, n + 1);
    return true;
}

void gi_hex(const unsigned char *in, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[2 * n] = '\0';
}

bool gi_text_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        int n;
        if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            return false;
        if (*p == 0x7f)
            return false;
        if (*p < 0x80) {
            p++;
            continue;
        }
        if ((*p & 0xe0) == 0xc0 && *p >= 0xc2)
            n = 1;
        else if ((*p & 0xf0) == 0xe0)
            n = 2;
        else if ((*p & 0xf8) == 0xf0 && *p <= 0xf4)
            n = 3;
        else
            return false;
        for (int i = 1; i <= n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return false;
        /* Refuse overlong forms, UTF-16 surrogates and code points past
         * U+10FFFF, which the lead byte alone does not rule out. */
        if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
            (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
            return false;
        p += n + 1;
    }
    return true;
}
