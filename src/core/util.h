/* Small shared helpers: time, bounded number parsing, bounded strings. */
#ifndef GI_UTIL_H
#define GI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Current time, unix seconds. */
int64_t gi_now(void);

/* Writes t as RFC 3339 UTC ("2026-01-02T03:04:05Z") into buf (>= 21 bytes);
 * "" when the text does not fit (t past year 9999 needs more). */
void gi_time_format(int64_t t, char *buf, size_t len);

/* Parses RFC 3339 (Z or +hh:mm offset, optional fraction) or plain unix
 * seconds into *out, from 1970 to the end of 9999. Returns GI_OK or
 * GI_INVALID. */
int gi_time_parse(const char *s, int64_t *out);

/* Parses a whole decimal integer in [min, max]; GI_OK or GI_INVALID. */
int gi_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Parses a whole finite decimal number in [min, max] under the C locale. */
int gi_parse_double(const char *s, double min, double max, double *out);

/* Copies src into dst (capacity len), always terminating; returns false
 * when src did not fit (dst then holds a truncated prefix). */
bool gi_strlcpy(char *dst, const char *src, size_t len);

/* Formats into dst (capacity len), always terminating; text that does
 * not fit is cut. For messages (errors, notes) where a cut tail is
 * acceptable; returns false when it was cut. */
bool gi_fmt(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Lower-case hex of n bytes into out (capacity >= 2n+1). */
void gi_hex(const unsigned char *in, size_t n, char *out);

/* True when s is a valid UTF-8 string without control characters other
 * than tab, CR and LF. */
bool gi_text_ok(const char *s);

#endif
