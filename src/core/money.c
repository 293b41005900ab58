/* Exact decimal money; see money.h. */
#include "core/money.h"
#include "core/status.h"

#include <stdio.h>
#include <string.h>

#define MAX_DIGITS 40

/* Reads the mantissa's digits into dig (leading zeros dropped) and the
 * count of digits before the point into *point; *decimals counts digits
 * written after the point. False when there are no digits or too many. */
static bool read_mantissa(const char **p, char *dig, int *nd, int *point, int *decimals)
{
    bool any = false, seen_point = false;

    *nd = *point = *decimals = 0;
    for (;; (*p)++) {
        char ch = **p;
        if (ch == '.' && !seen_point) {
            seen_point = true;
            continue;
        }
        if (ch < '0' || ch > '9')
            break;
        any = true;
        if (seen_point)
            (*decimals)++;
        if (*nd == 0 && ch == '0') {
            /* A leading zero: before the point it adds nothing, after it
             * it shifts the first significant digit right. */
            if (seen_point)
                (*point)--;
            continue;
        }
        if (*nd >= MAX_DIGITS)
            return false;
        dig[(*nd)++] = ch;
        if (!seen_point)
            (*point)++;
    }
    return any;
}

int gi_money_parse(const char *s, enum gi_money_mode mode, bool negative_ok, int64_t *micros)
{
    char dig[MAX_DIGITS];
    const char *p = s;
    bool neg = false;
    int nd, point, decimals, exp = 0;
    int64_t v = 0;

    if (s == NULL)
        return GI_INVALID;
    if (*p == '-' || (*p == '+' && mode == GI_MONEY_LENIENT))
        neg = *p++ == '-';
    if (!read_mantissa(&p, dig, &nd, &point, &decimals))
        return GI_INVALID;
    if ((*p == 'e' || *p == 'E') && mode == GI_MONEY_LENIENT) {
        int esign = 1, ed = 0;
        p++;
        if (*p == '+' || *p == '-')
            esign = *p++ == '-' ? -1 : 1;
        if (*p < '0' || *p > '9')
            return GI_INVALID;
        for (; *p >= '0' && *p <= '9'; p++) {
            exp = exp * 10 + (*p - '0');
            if (++ed > 3)
                return GI_INVALID;
        }
        exp *= esign;
    }
    if (*p != '\0' || (mode == GI_MONEY_STRICT && decimals > 6))
        return GI_INVALID;
    point += exp;
    /* The value is 0.d1d2...dn × 10^point; micro-units take the digits up
     * to position point + 6 and round on the next one. */
    if (point + 6 > 18 && nd > 0)
        return GI_INVALID;
    for (int i = 0; i < point + 6; i++) {
        int d = i < nd ? dig[i] - '0' : 0;
        v = v * 10 + d;
    }
    if (point + 6 >= 0 && point + 6 < nd && dig[point + 6] >= '5')
        v++;
    if (v < 0)
        return GI_INVALID;
    if (neg && v != 0 && !negative_ok)
        return GI_INVALID;
    *micros = neg ? -v : v;
    return GI_OK;
}

void gi_money_format(int64_t micros, int min_decimals, char *buf, size_t len)
{
    char frac[8];
    uint64_t a = micros < 0 ? (uint64_t)0 - (uint64_t)micros : (uint64_t)micros;
    int n = 6;

    if (min_decimals < 0)
        min_decimals = 0;
    if (min_decimals > 6)
        min_decimals = 6;
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(a % 1000000));
    while (n > min_decimals && frac[n - 1] == '0')
        n--;
    frac[n] = '\0';
    snprintf(buf, len, "%s%llu%s%s", micros < 0 ? "-" : "", (unsigned long long)(a / 1000000),
             n ? "." : "", frac);
}

bool gi_currency_ok(const char *s)
{
    if (s == NULL || strlen(s) != 3)
        return false;
    for (int i = 0; i < 3; i++)
        if (s[i] < 'A' || s[i] > 'Z')
            return false;
    return true;
}
