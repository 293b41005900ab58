/* Snipe-IT REST API pages (jansson): GET /api/v1/hardware lists
 * ({"total", "rows"}) into the asset records store_asset_ingest takes:
 * tag asset_tag, serial, model model.name, vendor manufacturer.name, kind
 * by category.name (gpu, server, psu, ssd, nic, switch, else other),
 * location {datacenter location.name (rtd_location.name when the asset
 * has no current location)}, purchase_date (date objects
 * {"date","formatted"} or text), purchase_cost {amount} from a
 * locale-formatted string ("1,234.56", "1.234,56"), warranty_months from
 * "36 months", order_number, supplier supplier.name, gpu_uuid from a
 * custom field whose label or column says GPU UUID, custom {the custom
 * fields by label, name, category, external_status status_label.name,
 * external_status_id status_label.id, external_stage}, source_key "snipeit:hardware:<id>".
 *
 * Strings are HTML-escaped by Snipe-IT (&amp; &lt; &#039; ...): every one
 * is decoded. A field that cannot be read is absent and warned
 * ({"index","field","error"}). A page fails (GI_INVALID, err filled) when
 * it is not JSON, or is an error answer: {"status":"error","messages":..}
 * (Snipe-IT answers errors with HTTP 200) or Laravel's {"message",
 * "errors"} without rows. */
#ifndef GI_PARSE_SNIPEIT_H
#define GI_PARSE_SNIPEIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNIPEIT_ERR_LEN 256

/* A lookup by serial (GET /api/v1/hardware/byserial/{serial}): *matches
 * receives a new array (caller owns) of the answer's assets, each with an
 * integer id > 0, and *total how many match. Snipe-IT answers "none" with
 * {"status":"error"} (HTTP 200): no matches, GI_OK. GI_INVALID with err
 * filled when the answer is neither, an asset has no id, or an asset's
 * serial (HTML-decoded, ignoring case as Snipe-IT's collation does) is
 * another one; GI_INTERNAL out of memory. */
int snipeit_lookup_parse(const char *body, size_t len, const char *serial, json_t **matches,
                         int64_t *total, char *err, size_t errlen);
/* Parses one page: appends records and warnings (caller's arrays), sets
 * *total (-1 when absent) and *rows (results on this page). */
int snipeit_parse_page(const char *body, size_t len, json_t *records, json_t *warnings,
                       int64_t *total, size_t *rows, char *err, size_t errlen);

/* Decodes HTML character references (&amp; &lt; &gt; &quot; &#039;
 * &#NNN; &#xHH;) of in into out; unknown or malformed references are kept
 * as written. False when out is too small or a reference decodes to NUL
 * or a non-character. */
bool snipeit_html_decode(const char *in, char *out, size_t outlen);

/* A locale-formatted amount ("1,234.56", "1.234,56", "1234", "1 234,5",
 * "1'234.50") as a plain decimal ("1234.56") in out. When both ',' and
 * '.' occur the last one is the decimal mark; a mark that occurs more than
 * once separates thousands; a single ',' followed by exactly three digits
 * separates thousands ("1,234" = 1234); any other single mark is the
 * decimal mark. Spaces and apostrophes are thousands separators. False
 * when s is not an amount. */
bool snipeit_money(const char *s, char *out, size_t outlen);

/* "36 months" / "36" / 36 → 36; false when there is no number. */
bool snipeit_months(const json_t *v, int64_t *months);

/* The stage a Snipe-IT status_meta maps to (NULL when none): deployed →
 * active, deployable → spare, pending → received, archived →
 * decommissioned, undeployable → diagnostic_repair. */
const char *snipeit_stage_for(const char *status_meta);

#endif
