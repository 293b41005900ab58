/* Helpers the nvidia-smi parsers share (nvsmi.c: CSV queries and -L;
 * nvsmi_xml.c: the -q -x report). Private to src/parse/nvsmi*.c. */
#ifndef GI_PARSE_NVSMI_INT_H
#define GI_PARSE_NVSMI_INT_H

#include "core/observation.h"

#include <stddef.h>

/* Units a reading may carry after its number ("81559 MiB", "70.5 W"). */
enum nvsmi_unit { U_NONE, U_MIB, U_W, U_PCT, U_C, U_MHZ };

/* Writes a formatted message into err (if any). */
void nvsmi_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Trims blanks and CRs at both ends of s in place; returns the start. */
char *nvsmi_trim(char *s);
/* Parses s as a finite decimal number, with an optional unit suffix u;
 * 0 on success, -1 when it is not one (the field is then absent). */
int nvsmi_parse_num(const char *s, enum nvsmi_unit u, double *out);
/* "Enabled" → 1, "Disabled" → 0; -2 for anything else. */
int nvsmi_parse_mig(const char *s);
/* Normalizes a PCI bus id; -1 when it is not one. */
int nvsmi_norm_bus(const char *s, char out[GI_BUS_LEN]);
/* Copies an identity string; -1 when it is too long or not clean text. */
int nvsmi_put_str(char *dst, size_t cap, const char *src);
/* Copies free text (a process name), replacing what is not clean text. */
void nvsmi_put_text(char *dst, size_t cap, const char *src);

#endif
