/* QR codes as SVG: the module matrix libqrencode computes for a text,
 * written as one <svg> element whose one path covers exactly the dark
 * modules, with a quiet zone around them. */
#ifndef GI_CORE_QRSVG_H
#define GI_CORE_QRSVG_H

#include <stdio.h>

/* Modules of quiet zone on each side of the symbol. */
#define GI_QR_QUIET 4

/* Writes the QR code of `text` (8-bit mode, error correction level M) to
 * f as an <svg> element whose viewBox is in module units (width + 2 *
 * GI_QR_QUIET each way), `attrs` (may be NULL; written as given, the
 * caller escapes it) added to its opening tag, e.g. x/y/width/height when
 * it is nested in a larger drawing. The text is also its <title>,
 * escaped. *modules (may be NULL) receives the symbol's width in modules
 * (17 + 4 * version). GI_INVALID for an empty text or one too long for
 * any version, GI_INTERNAL when out of memory. */
int gi_qr_svg(FILE *f, const char *text, const char *attrs, int *modules);

/* Writes s to f with &, <, >, " and ' escaped for XML text and
 * attributes, and control characters other than tab and newline left
 * out (XML 1.0 cannot carry them). */
void gi_xml_escape(FILE *f, const char *s);

#endif
