/* FusionInventory / GLPI agent messages: the body of the agent's POST
 * (zlib, gzip or plain XML) and the <REQUEST> inside it.
 *
 * glpi_decode/glpi_encode (glpi_body.c) turn a body into XML text and a
 * reply into the encoding the agent used. glpi_parse (glpi.c) reads the
 * XML with libxml2 (no network, no DTD loading, entities left unexpanded)
 * into the QUERY, the DEVICEID and, for an INVENTORY, the asset records
 * that store_asset_ingest takes:
 *
 *   the machine    kind "server" ("other" when VMSYSTEM names a hypervisor
 *                  guest), serial BIOS/SSN (BIOS/MSN when SSN is junk),
 *                  vendor SMANUFACTURER, model SMODEL, tag ASSETTAG when
 *                  real, source_key = DEVICEID, custom {hostname,
 *                  system_uuid, cpu_model, cpu_count, cpu_cores,
 *                  memory_mib, os, vmsystem, bios_version, bios_date}
 *   its GPUs       kind "gpu": display CONTROLLERS of vendor 10de (NVIDIA)
 *                  or 1002 (AMD) and the VIDEOS that are NVIDIA or AMD,
 *                  one record per PCI slot; model NAME, custom {pci_slot,
 *                  pci_id, memory_mib, chipset}; source_key DEVICEID "/gpu/"
 *                  slot (or "/video/" index without a slot)
 *   its disks      kind "ssd": STORAGES with a real SERIALNUMBER
 *   its NICs       kind "nic": physical NETWORKS with a MAC, one per MAC,
 *                  vendor/model from the CONTROLLERS entry of its PCI slot
 *   its PSUs       kind "psu": POWERSUPPLIES with a real SERIALNUMBER
 *
 * Each child names the machine by parent_tag, else parent_serial, else
 * parent_source_key. A hypervisor guest's disks and NICs are virtual and
 * left out; a container (Docker, lxc, ...) reports its host's hardware.
 *
 * Per field: a value that is junk ("", "000", "To be filled by O.E.M.",
 * "0123456789", "Default string", ...) is absent; one that cannot be read
 * (too long, a number that is not one) is absent and listed in
 * `warnings`. Only the structure fails a parse: XML that is not
 * well-formed, a root other than <REQUEST>, no QUERY, or a DEVICEID that
 * is missing or not text. */
#ifndef GI_PARSE_GLPI_H
#define GI_PARSE_GLPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest decoded body accepted: past it decoding stops (zip bombs). */
#define GLPI_MAX_DECODED (16u * 1024u * 1024u)
/* The most records one inventory yields; the rest are dropped (warned). */
#define GLPI_MAX_RECORDS 4096
/* DEVICEID and QUERY bounds, in bytes. */
#define GLPI_DEVICEID_MAX 255
#define GLPI_QUERY_MAX 32
/* A good size for err buffers. */
#define GLPI_ERR_LEN 256

enum glpi_encoding { GLPI_PLAIN, GLPI_ZLIB, GLPI_GZIP, GLPI_DEFLATE };

/* Tells a body's encoding: by its magic bytes (zlib 78 xx with a valid
 * header check, gzip 1f 8b 08), else raw deflate when content_type (may be
 * NULL) says application/x-compress-zlib and the body does not start like
 * XML, else plain. */
enum glpi_encoding glpi_detect(const void *body, size_t len, const char *content_type);

/* Decodes body (borrowed) of encoding enc into *out (a new NUL-terminated
 * buffer, caller frees) of *outlen bytes. GI_OK; GI_TOO_LARGE when the
 * text would exceed max bytes; GI_INVALID when the data is corrupt or
 * truncated (err says so); GI_INTERNAL when out of memory. */
int glpi_decode(const void *body, size_t len, enum glpi_encoding enc, size_t max, char **out,
                size_t *outlen, char *err, size_t errlen);

/* Encodes text as enc (GLPI_DEFLATE answers as zlib, the agents' form)
 * into *out (new, caller frees). GI_OK or GI_INTERNAL. */
int glpi_encode(const char *text, size_t len, enum glpi_encoding enc, unsigned char **out,
                size_t *outlen);

/* One agent message. */
struct glpi_msg {
    char query[GLPI_QUERY_MAX + 1];       /* "PROLOG", "INVENTORY", ... as sent */
    char deviceid[GLPI_DEVICEID_MAX + 1]; /* "host-2018-10-03-08-42-36" */
    char hostname[256];                   /* HARDWARE/NAME, "" when absent */
    json_t *records;                      /* INVENTORY: the asset records; else NULL */
    json_t *warnings;                     /* [{"field", "error"}]: values left absent */
    size_t gpus;                          /* how many records are GPUs */
};

/* Parses one message from xml (borrowed, len bytes, need not be
 * NUL-terminated) into *m (zeroed on entry; release with glpi_msg_free,
 * also after a failure). GI_OK; GI_INVALID with err naming the element;
 * GI_TOO_LARGE past GLPI_MAX_DECODED; GI_INTERNAL when out of memory. */
int glpi_parse(const char *xml, size_t len, struct glpi_msg *m, char *err, size_t errlen);

/* Frees what m holds and zeroes it; accepts a zeroed m. */
void glpi_msg_free(struct glpi_msg *m);

/* True for a serial, tag or name that means "none": empty, one character
 * repeated ("000", "FFFF", "...."), a run of ascending digits
 * ("0123456789"), or a vendor's placeholder ("To be filled by O.E.M.",
 * "Default string", "System Serial Number", "Not Specified", ...). */
bool glpi_is_junk(const char *s);

#endif
