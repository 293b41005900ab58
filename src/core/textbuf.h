/* A growable text buffer with a hard size bound, and the writers of the
 * two encodings replies stream into it: JSON values written exactly as
 * jansson's compact encoder writes them (so that a reply built here is
 * byte for byte the one json_dumps would give), and CSV cells. */
#ifndef GI_TEXTBUF_H
#define GI_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

struct textbuf {
    char *p; /* NUL-terminated while not failed; owned */
    size_t len, cap;
    size_t max;  /* bytes the text may grow to (0: TEXTBUF_MAX) */
    bool failed; /* out of memory or past max: every later write is ignored */
};

#define TEXTBUF_MAX ((size_t)1 << 30)

/* Appends n bytes of s. */
void tb_put(struct textbuf *b, const char *s, size_t n);
/* Appends the NUL-terminated s. */
void tb_puts(struct textbuf *b, const char *s);

/* Appends s as a JSON string, quoted and escaped as jansson escapes it.
 * False (nothing written) when s is not valid UTF-8, where jansson makes
 * no string at all; s NULL writes null. */
bool tb_json_str(struct textbuf *b, const char *s);
/* Appends d as jansson writes a real: "%.17g", with ".0" added when that
 * has neither a point nor an exponent, and the exponent's '+' and leading
 * zeros dropped. */
void tb_json_real(struct textbuf *b, double d);

/* Appends s as one CSV cell: quoted when it holds a comma, a quote or a
 * line break, and, when `text` (s is a string value, not a rendered number
 * or document), with a leading apostrophe where a spreadsheet would run it
 * as a formula. */
void tb_csv_cell(struct textbuf *b, const char *s, bool text);
/* Appends the shortest decimal text that reads back as exactly d. */
void tb_csv_real(struct textbuf *b, double d);

/* The text (caller frees) and its length; NULL (the buffer freed) when a
 * write failed. The buffer is empty afterwards. */
char *tb_take(struct textbuf *b, size_t *len);
/* Frees the text; accepts an empty buffer. */
void tb_free(struct textbuf *b);

#endif
