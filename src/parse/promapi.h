/* Prometheus HTTP API responses (/api/v1/query, /api/v1/query_range):
 * pure parser (bytes in, samples out through the promtext.h callback, no
 * I/O), bounded.
 *
 * The envelope is {"status":"success"|"error","data":…,"errorType",
 * "error","warnings"}. data.resultType vector gives one sample per item
 * ({"metric":{…},"value":[<unix seconds>,"<value>"]}), matrix one per
 * point of each item's "values" in the order given (ascending time),
 * scalar one unnamed sample. The metric's __name__ label becomes the
 * sample name ("" without one) and is not repeated among the labels.
 * Items that carry only native histograms ("histogram"/"histograms") are
 * skipped. Every sample has has_ts set and type PROM_UNTYPED. */
#ifndef GI_PROMAPI_H
#define GI_PROMAPI_H

#include "parse/promtext.h"

#include <stddef.h>

#define PROMAPI_MAX_BYTES (256u * 1024 * 1024) /* one response body */

/* Parses a response body (borrowed, need not be NUL-terminated) and
 * calls fn for each sample. Returns GI_OK, or:
 *   GI_INVALID     malformed JSON or shape, a "string" result, or an
 *                  error envelope of errorType bad_data, execution, …
 *   GI_UNAVAILABLE an error envelope of errorType timeout, canceled,
 *                  unavailable or internal (a retry may work)
 *   GI_NOT_FOUND   an error envelope of errorType not_found
 *   GI_TOO_LARGE   past a bound (body, labels, names, samples)
 *   or the consumer's status.
 * For an error envelope err->api_type holds the errorType and err->msg
 * the server's message. err->line is the JSON line of a syntax error,
 * else 0; err->msg names the offending item ("data.result[3].value: …").
 * err may be NULL. */
int promapi_parse(const char *data, size_t len, prom_sample_fn fn, void *ctx,
                  struct prom_error *err);

#endif
