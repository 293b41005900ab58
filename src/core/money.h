/* Money as exact decimal text: amounts are held as micro-units (10^-6 of
 * the currency) in int64_t, parsed from and written as decimal strings,
 * never through floating point. */
#ifndef GI_MONEY_H
#define GI_MONEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How gi_money_parse() reads its text. */
enum gi_money_mode {
    /* Catalog input: digits with at most 6 decimals, an optional leading
     * '-' (when negatives are allowed); no exponent, no '+'. */
    GI_MONEY_STRICT,
    /* Export input: also a leading '+', an exponent ("1.2E-5") and any
     * number of decimals, rounded half away from zero to 6. */
    GI_MONEY_LENIENT,
};

/* Parses s into *micros; GI_OK, or GI_INVALID (not a number, too many
 * decimals in strict mode, negative when !negative_ok, out of range). */
int gi_money_parse(const char *s, enum gi_money_mode mode, bool negative_ok, int64_t *micros);

/* Writes micros as decimal text with at least min_decimals (0..6) and at
 * most 6 decimals, trailing zeros past min_decimals dropped: 2500000 →
 * "2.50" with 2. buf needs 32 bytes. */
void gi_money_format(int64_t micros, int min_decimals, char *buf, size_t len);

/* True when s is an ISO 4217-shaped currency code: 3 upper-case letters. */
bool gi_currency_ok(const char *s);

#endif
