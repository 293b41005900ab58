/* A FusionInventory / GLPI agent's <REQUEST> (read with libxml2) into the
 * asset records of its machine and of the GPUs, disks, NICs and power
 * supplies inside it. See glpi.h for what becomes what. */
#include "parse/glpi.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The longest text read from one element, and the longest kept for a
 * serial, vendor, model or other text field (what an asset holds). */
#define TEXT_MAX 1024
#define FIELD_MAX 128
/* An asset tag travels in URLs (/api/v1/assets/{tag}): 1..64 letters,
 * digits and . _ - : as assets take it. */
#define TAG_MAX 64
/* The longest source_key an asset keeps. */
#define KEY_MAX 256
/* The most warnings listed; the rest are only counted. */
#define WARN_MAX 100

struct gctx {
    struct glpi_msg *m;
    size_t nwarn;
    bool full; /* GLPI_MAX_RECORDS reached (warned once) */
    /* The machine's identity as its children name it. */
    const char *parent_field, *parent_value;
    char parent_buf[FIELD_MAX + 1];
    bool virtual_guest;
    /* GPU and NIC records by PCI slot ("0000:3b:00.0"), NICs also by MAC;
     * borrowed from m->records. */
    json_t *gpu_by_slot, *nic_by_slot, *nic_by_mac, *disk_by_serial;
};

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(struct gctx *g, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Lists one value left absent: {"field", "error"}. */
static void warn(struct gctx *g, const char *field, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    if (g->nwarn++ >= WARN_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(g->m->warnings, json_pack("{s:s, s:s}", "field", field, "error", msg));
}

/* ---- junk values --------------------------------------------------------- */

bool glpi_is_junk(const char *s)
{
    /* Placeholders firmware and vendors leave in SMBIOS strings. */
    static const char *const words[] = {"to be filled by o.e.m.",
                                        "to be filled by oem",
                                        "default string",
                                        "default",
                                        "system serial number",
                                        "system product name",
                                        "system manufacturer",
                                        "system version",
                                        "chassis serial number",
                                        "base board serial number",
                                        "baseboard serial number",
                                        "serial number",
                                        "serialnumber",
                                        "serial",
                                        "not specified",
                                        "not applicable",
                                        "not available",
                                        "not present",
                                        "no asset tag",
                                        "no asset information",
                                        "noassettag",
                                        "asset tag",
                                        "asset-1234567890",
                                        "unknown",
                                        "invalid",
                                        "none",
                                        "null",
                                        "empty",
                                        "n/a",
                                        "na",
                                        "oem",
                                        "o.e.m.",
                                        "$(default_string)",
                                        "123456789",
                                        "1234567890",
                                        "0123456789",
                                        "01234567890",
                                        "12345678",
                                        "xxxxxxxxxxxx",
                                        NULL};
    size_t n, distinct = 0;
    char first = 0;
    bool ascending = true;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0)
        return true;
    for (const char *const *w = words; *w; w++)
        if (strlen(*w) == n && strncasecmp(s, *w, n) == 0)
            return true;
    if (gi_is_placeholder(s) || strstr(s, "O.E.M") || strstr(s, "o.e.m"))
        return true;
    /* One character repeated, separators aside ("000", "FFFF-FFFF",
     * "00000000-0000-0000-0000-000000000000", "..."), or a run of
     * ascending digits from 0 or 1. */
    for (size_t i = 0; i < n; i++) {
        char c = (char)tolower((unsigned char)s[i]);
        if (i > 0 && !(isdigit((unsigned char)s[i]) && s[i] == s[i - 1] + 1))
            ascending = false;
        if (c == '-' || c == ':' || c == '.' || c == ' ' || c == '_')
            continue;
        if (distinct == 0) {
            first = c;
            distinct = 1;
        } else if (c != first) {
            distinct = 2;
        }
    }
    if (distinct <= 1)
        return true;
    return ascending && n >= 5 && (s[0] == '0' || s[0] == '1');
}

/* ---- reading elements ---------------------------------------------------- */

/* First element child of n called name; NULL if none (or n is NULL). */
static xmlNode *xchild(xmlNode *n, const char *name)
{
    if (n == NULL)
        return NULL;
    for (xmlNode *c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, name) == 0)
            return c;
    return NULL;
}

/* Trims blanks, tabs, CRs and LFs at both ends of buf in place. */
static void trim(char *buf)
{
    size_t n = strlen(buf), i = 0;

    while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
        buf[--n] = '\0';
    while (buf[i] && strchr(" \t\r\n", buf[i]))
        i++;
    if (i > 0)
        memmove(buf, buf + i, n - i + 1);
}

/* Copies the trimmed text directly inside n (text and CDATA children
 * only: entity references are never expanded) into buf. An absent n
 * gives "". Returns 0, or -1 when the text is longer than cap - 1. */
static int xtext(xmlNode *n, char *buf, size_t cap)
{
    size_t o = 0;

    buf[0] = '\0';
    if (n == NULL)
        return 0;
    for (xmlNode *c = n->children; c; c = c->next) {
        size_t len;
        if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) || !c->content)
            continue;
        len = strlen((const char *)c->content);
        if (o + len >= cap)
            return -1;
        memcpy(buf + o, c->content, len);
        o += len;
        buf[o] = '\0';
    }
    trim(buf);
    return 0;
}

/* Names a field for warnings: "BIOS/SSN", "STORAGES[2]/SERIALNUMBER". */
static void field_name(char *out, size_t len, const char *sec, int idx, const char *name)
{
    if (idx < 0)
        snprintf(out, len, "%s/%s", sec, name);
    else
        snprintf(out, len, "%s[%d]/%s", sec, idx, name);
}

/* Reads the text of element `name` under sec into buf (capacity
 * FIELD_MAX + 1): "" when absent or junk (if junk_empty), and when too
 * long or not text (then warned). Returns buf. */
static const char *gstr(struct gctx *g, xmlNode *sec, const char *secname, int idx,
                        const char *name, bool junk_empty, char buf[FIELD_MAX + 1])
{
    char text[TEXT_MAX], fname[96];
    xmlNode *n = xchild(sec, name);

    buf[0] = '\0';
    if (n == NULL)
        return buf;
    field_name(fname, sizeof fname, secname, idx, name);
    if (xtext(n, text, sizeof text) < 0 || strlen(text) > FIELD_MAX) {
        warn(g, fname, "longer than %d bytes; left absent", FIELD_MAX);
        return buf;
    }
    if (!gi_text_ok(text) || strpbrk(text, "\t\r\n")) {
        warn(g, fname, "not one line of text; left absent");
        return buf;
    }
    if (junk_empty && glpi_is_junk(text))
        return buf;
    memcpy(buf, text, strlen(text) + 1);
    return buf;
}

/* Reads a whole number in [min, max] under sec: -1 when absent or a
 * placeholder, and when unreadable (then warned). */
static int64_t gint(struct gctx *g, xmlNode *sec, const char *secname, int idx, const char *name,
                    int64_t min, int64_t max)
{
    char buf[FIELD_MAX + 1], fname[96];
    int64_t v;

    gstr(g, sec, secname, idx, name, false, buf);
    if (gi_is_placeholder(buf))
        return -1;
    if (gi_parse_int64(buf, min, max, &v) != GI_OK) {
        field_name(fname, sizeof fname, secname, idx, name);
        warn(g, fname, "not a whole number in [%lld, %lld]: \"%.40s\"; left absent", (long long)min,
             (long long)max, buf);
        return -1;
    }
    return v;
}

/* Sets o[k] to the string v unless v is "". */
static void put_str(json_t *o, const char *k, const char *v)
{
    if (v && v[0])
        json_object_set_new(o, k, json_string(v));
}

/* Sets o[k] to the integer v unless v < 0. */
static void put_int(json_t *o, const char *k, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, k, json_integer((json_int_t)v));
}

/* Lower-case hex digits of s into out when s is `n` hex digits. */
static bool hex_id(const char *s, size_t n, char *out)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return false;
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[n] = '\0';
    return true;
}

/* Normalizes a MAC (6 to 20 octets of two hex digits, ':' or '-'
 * separated) to lower case with ':'; false when it is not one or is all
 * zeros. */
static bool mac_norm(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s), octets = (n + 1) / 3;
    bool nonzero = false;

    if (n < 17 || (n + 1) % 3 != 0 || octets > 20 || n + 1 > cap)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 2) {
            if (s[i] != ':' && s[i] != '-')
                return false;
            out[i] = ':';
        } else {
            if (!isxdigit((unsigned char)s[i]))
                return false;
            out[i] = (char)tolower((unsigned char)s[i]);
            nonzero |= s[i] != '0';
        }
    }
    out[n] = '\0';
    return nonzero;
}

/* True for text usable as an asset tag. */
static bool tag_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > TAG_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-:", s[i]))
            return false;
    return true;
}

/* ---- records ------------------------------------------------------------- */

/* A new child record of kind with its source_key DEVICEID + suffix and
 * the machine as its parent, appended to m->records; NULL once the
 * record bound is reached (warned once). Borrowed from m->records. */
static json_t *child_new(struct gctx *g, const char *kind, const char *suffix)
{
    char key[GLPI_DEVICEID_MAX + 2 * FIELD_MAX + 16];
    json_t *r;

    if (json_array_size(g->m->records) >= GLPI_MAX_RECORDS) {
        if (!g->full)
            warn(g, "CONTENT", "more than %d components; the rest are left out", GLPI_MAX_RECORDS);
        g->full = true;
        return NULL;
    }
    /* DEVICEID/suffix; the suffix alone (unique within the source,
     * which is "glpi:" DEVICEID) when that would be too long to keep. */
    if ((size_t)snprintf(key, sizeof key, "%s/%s", g->m->deviceid, suffix) > KEY_MAX)
        snprintf(key, sizeof key, "%s", suffix);
    r = json_pack("{s:s, s:s, s:s, s:{}}", "kind", kind, "source_key", key, g->parent_field,
                  g->parent_value, "custom");
    if (r == NULL || json_array_append_new(g->m->records, r) != 0)
        return NULL;
    return r;
}

/* True when a VMSYSTEM value names the machine's own hardware: a
 * physical machine, or a container that sees its host's. */
static bool vmsystem_is_hardware(const char *v)
{
    static const char *const own[] = {"Physical",       "Docker",      "lxc",     "LXC",
                                      "Virtuozzo",      "SolarisZone", "BSDJail", "OpenVZ",
                                      "systemd-nspawn", "Podman",      NULL};

    if (v[0] == '\0')
        return true;
    for (const char *const *w = own; *w; w++)
        if (strcasecmp(v, *w) == 0)
            return true;
    return false;
}

/* The machine's record, first in m->records; sets who the children name
 * as their parent. */
static int machine_record(struct gctx *g, xmlNode *content)
{
    xmlNode *bios = xchild(content, "BIOS"), *hw = xchild(content, "HARDWARE");
    xmlNode *os = xchild(content, "OPERATINGSYSTEM");
    char serial[FIELD_MAX + 1], vendor[FIELD_MAX + 1], model[FIELD_MAX + 1], tag[FIELD_MAX + 1];
    char buf[FIELD_MAX + 1], vm[FIELD_MAX + 1];
    json_t *r, *custom;
    int64_t cpus = 0, cores = -1, mem = -1, v;
    int idx = 0;

    if ((r = json_pack("{s:s, s:s, s:{}}", "kind", "server", "source_key", g->m->deviceid,
                       "custom")) == NULL ||
        json_array_append_new(g->m->records, r) != 0)
        return GI_INTERNAL;
    custom = json_object_get(r, "custom");
    gstr(g, hw, "HARDWARE", -1, "VMSYSTEM", true, vm);
    g->virtual_guest = !vmsystem_is_hardware(vm);
    if (g->virtual_guest)
        json_object_set_new(r, "kind", json_string("other"));
    put_str(custom, "vmsystem", vm);

    /* The system serial, else the board's when the system's is junk. */
    if (!gstr(g, bios, "BIOS", -1, "SSN", true, serial)[0])
        gstr(g, bios, "BIOS", -1, "MSN", true, serial);
    if (!gstr(g, bios, "BIOS", -1, "SMANUFACTURER", true, vendor)[0])
        gstr(g, bios, "BIOS", -1, "MMANUFACTURER", true, vendor);
    if (!gstr(g, bios, "BIOS", -1, "SMODEL", true, model)[0])
        gstr(g, bios, "BIOS", -1, "MMODEL", true, model);
    gstr(g, bios, "BIOS", -1, "ASSETTAG", true, tag);
    if (tag[0] && !tag_ok(tag)) {
        warn(g, "BIOS/ASSETTAG",
             "not usable as an asset tag (1..%d letters, digits and . _ - :); left absent",
             TAG_MAX);
        tag[0] = '\0';
    }
    put_str(r, "serial", serial);
    put_str(r, "vendor", vendor);
    put_str(r, "model", model);
    put_str(r, "tag", tag);
    put_str(custom, "bios_version", gstr(g, bios, "BIOS", -1, "BVERSION", true, buf));
    put_str(custom, "bios_date", gstr(g, bios, "BIOS", -1, "BDATE", true, buf));
    gstr(g, hw, "HARDWARE", -1, "NAME", true, buf);
    gi_strlcpy(g->m->hostname, buf, sizeof g->m->hostname);
    put_str(custom, "hostname", buf);
    put_str(custom, "system_uuid", gstr(g, hw, "HARDWARE", -1, "UUID", true, buf));

    /* CPUs: one CPUS element per socket. */
    for (xmlNode *c = content->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "CPUS") != 0)
            continue;
        cpus++;
        if (!json_object_get(custom, "cpu_model"))
            put_str(custom, "cpu_model", gstr(g, c, "CPUS", idx, "NAME", true, buf));
        if ((v = gint(g, c, "CPUS", idx, "CORE", 0, 1 << 20)) >= 0)
            cores = (cores < 0 ? 0 : cores) + v;
        idx++;
    }
    if (!json_object_get(custom, "cpu_model"))
        put_str(custom, "cpu_model", gstr(g, hw, "HARDWARE", -1, "PROCESSORT", true, buf));
    if (cpus == 0)
        cpus = gint(g, hw, "HARDWARE", -1, "PROCESSORN", 0, 1 << 16);
    put_int(custom, "cpu_count", cpus > 0 ? cpus : -1);
    put_int(custom, "cpu_cores", cores);

    /* Memory in MiB: HARDWARE/MEMORY, else the sum of the modules. */
    mem = gint(g, hw, "HARDWARE", -1, "MEMORY", 0, INT64_C(1) << 40);
    if (mem < 0) {
        idx = 0;
        for (xmlNode *c = content->children; c; c = c->next) {
            if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "MEMORIES") != 0)
                continue;
            if ((v = gint(g, c, "MEMORIES", idx++, "CAPACITY", 0, INT64_C(1) << 30)) >= 0)
                mem = (mem < 0 ? 0 : mem) + v;
        }
    }
    put_int(custom, "memory_mib", mem);
    if (!gstr(g, os, "OPERATINGSYSTEM", -1, "FULL_NAME", true, buf)[0])
        gstr(g, hw, "HARDWARE", -1, "OSNAME", true, buf);
    put_str(custom, "os", buf);

    /* What the children call their parent. */
    if (tag[0]) {
        g->parent_field = "parent_tag";
        gi_strlcpy(g->parent_buf, tag, sizeof g->parent_buf);
    } else if (serial[0]) {
        g->parent_field = "parent_serial";
        gi_strlcpy(g->parent_buf, serial, sizeof g->parent_buf);
    } else {
        g->parent_field = "parent_source_key";
        gi_strlcpy(g->parent_buf, g->m->deviceid, sizeof g->parent_buf);
    }
    g->parent_value = g->parent_buf;
    return GI_OK;
}

/* The vendor of a GPU's PCI vendor id: NVIDIA, AMD, or NULL for another. */
static const char *gpu_vendor(const char *vendorid)
{
    if (strcmp(vendorid, "10de") == 0)
        return "NVIDIA";
    if (strcmp(vendorid, "1002") == 0)
        return "AMD";
    return NULL;
}

/* The GPU vendor a display name tells, or NULL (an ASPEED or Matrox BMC
 * display, a virtual one). */
static const char *gpu_vendor_by_name(const char *name)
{
    static const char *const nv[] = {"nvidia", "geforce", "quadro", "tesla", NULL};
    static const char *const amd[] = {"radeon", "instinct", "firepro", "amd ", NULL};
    char low[FIELD_MAX + 2];
    size_t i;

    for (i = 0; name[i] && i < FIELD_MAX; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[i++] = ' ';
    low[i] = '\0';
    for (const char *const *w = nv; *w; w++)
        if (strstr(low, *w))
            return "NVIDIA";
    for (const char *const *w = amd; *w; w++)
        if (strstr(low, *w))
            return "AMD";
    return NULL;
}

/* The normalized PCI slot of element sec into out ("" when absent or
 * unreadable, then warned). */
static void gslot(struct gctx *g, xmlNode *sec, const char *secname, int idx, char out[GI_BUS_LEN])
{
    char buf[FIELD_MAX + 1], fname[96];

    out[0] = '\0';
    if (!gstr(g, sec, secname, idx, "PCISLOT", true, buf)[0])
        return;
    if (gi_pci_normalize(buf, out) < 0) {
        out[0] = '\0';
        field_name(fname, sizeof fname, secname, idx, "PCISLOT");
        warn(g, fname, "not a PCI address: \"%.40s\"; left absent", buf);
    }
}

/* GPUs from the display-class CONTROLLERS of NVIDIA and AMD. */
static void gpus_from_controllers(struct gctx *g, xmlNode *content)
{
    char vid[8], pid[8], slot[GI_BUS_LEN], buf[FIELD_MAX + 1], key[GI_BUS_LEN + 32];
    char pci_id[16];
    int idx = -1;

    for (xmlNode *c = content->children; c; c = c->next) {
        const char *vendor;
        json_t *r, *custom;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "CONTROLLERS") != 0)
            continue;
        idx++;
        gstr(g, c, "CONTROLLERS", idx, "PCICLASS", true, buf);
        if (!hex_id(buf, 4, vid) || strncmp(vid, "03", 2) != 0)
            continue;
        gstr(g, c, "CONTROLLERS", idx, "VENDORID", true, buf);
        if (!hex_id(buf, 4, vid) || (vendor = gpu_vendor(vid)) == NULL)
            continue;
        gslot(g, c, "CONTROLLERS", idx, slot);
        if (slot[0] && json_object_get(g->gpu_by_slot, slot))
            continue;
        if (slot[0])
            snprintf(key, sizeof key, "gpu/%s", slot);
        else
            snprintf(key, sizeof key, "gpu/controller-%d", idx);
        if ((r = child_new(g, "gpu", key)) == NULL)
            return;
        g->m->gpus++;
        custom = json_object_get(r, "custom");
        put_str(r, "vendor", vendor);
        put_str(r, "model", gstr(g, c, "CONTROLLERS", idx, "NAME", true, buf));
        put_str(r, "serial", gstr(g, c, "CONTROLLERS", idx, "SERIAL", true, buf));
        put_str(custom, "pci_slot", slot);
        gstr(g, c, "CONTROLLERS", idx, "PRODUCTID", true, buf);
        if (hex_id(buf, 4, pid)) {
            snprintf(pci_id, sizeof pci_id, "%s:%s", vid, pid);
            put_str(custom, "pci_id", pci_id);
        }
        if (slot[0])
            json_object_set(g->gpu_by_slot, slot, r);
    }
}

/* GPUs from VIDEOS: merged into the controller of the same slot, or new
 * when the entry is NVIDIA or AMD (by PCIID or name). */
static void gpus_from_videos(struct gctx *g, xmlNode *content)
{
    char slot[GI_BUS_LEN], name[FIELD_MAX + 1], chipset[FIELD_MAX + 1], buf[FIELD_MAX + 1];
    char vid[8], key[GI_BUS_LEN + 32];
    int idx = -1;

    for (xmlNode *c = content->children; c; c = c->next) {
        const char *vendor = NULL;
        json_t *r, *custom;
        int64_t mem;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "VIDEOS") != 0)
            continue;
        idx++;
        gslot(g, c, "VIDEOS", idx, slot);
        gstr(g, c, "VIDEOS", idx, "NAME", true, name);
        gstr(g, c, "VIDEOS", idx, "CHIPSET", true, chipset);
        gstr(g, c, "VIDEOS", idx, "PCIID", true, buf);
        if (strlen(buf) >= 4 && buf[4] == ':') {
            buf[4] = '\0';
            if (hex_id(buf, 4, vid))
                vendor = gpu_vendor(vid);
        }
        r = slot[0] ? json_object_get(g->gpu_by_slot, slot) : NULL;
        if (r == NULL) {
            if (vendor == NULL && (vendor = gpu_vendor_by_name(name)) == NULL &&
                (vendor = gpu_vendor_by_name(chipset)) == NULL)
                continue;
            if (slot[0])
                snprintf(key, sizeof key, "gpu/%s", slot);
            else
                snprintf(key, sizeof key, "video/%d", idx);
            if ((r = child_new(g, "gpu", key)) == NULL)
                return;
            g->m->gpus++;
            put_str(r, "vendor", vendor);
            put_str(json_object_get(r, "custom"), "pci_slot", slot);
            if (slot[0])
                json_object_set(g->gpu_by_slot, slot, r);
        }
        custom = json_object_get(r, "custom");
        if (!json_object_get(r, "model"))
            put_str(r, "model", name[0] ? name : chipset);
        if (!json_object_get(custom, "chipset"))
            put_str(custom, "chipset", chipset);
        if ((mem = gint(g, c, "VIDEOS", idx, "MEMORY", 0, INT64_C(1) << 24)) >= 0)
            put_int(custom, "memory_mib", mem);
    }
}

/* Disks from STORAGES with a real serial, one per serial. */
static void disks(struct gctx *g, xmlNode *content)
{
    static const char *const skip[] = {"cdrom", "rom", "dvd", "floppy", "tape", NULL};
    char serial[FIELD_MAX + 1], buf[FIELD_MAX + 1], key[FIELD_MAX + 16];
    int idx = -1;

    for (xmlNode *c = content->children; c; c = c->next) {
        json_t *r, *custom;
        bool removable = false;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "STORAGES") != 0)
            continue;
        idx++;
        gstr(g, c, "STORAGES", idx, "TYPE", true, buf);
        for (const char *const *w = skip; *w; w++)
            removable |= strcasecmp(buf, *w) == 0;
        if (strcasecmp(gstr(g, c, "STORAGES", idx, "INTERFACE", true, buf), "USB") == 0)
            removable = true;
        if (removable)
            continue;
        if (!gstr(g, c, "STORAGES", idx, "SERIALNUMBER", true, serial)[0] &&
            !gstr(g, c, "STORAGES", idx, "SERIAL", true, serial)[0])
            continue;
        if (json_object_get(g->disk_by_serial, serial))
            continue; /* the same disk seen twice (multipath) */
        snprintf(key, sizeof key, "disk/%s", serial);
        if ((r = child_new(g, "ssd", key)) == NULL)
            return;
        json_object_set(g->disk_by_serial, serial, r);
        custom = json_object_get(r, "custom");
        put_str(r, "serial", serial);
        put_str(r, "vendor", gstr(g, c, "STORAGES", idx, "MANUFACTURER", true, buf));
        put_str(r, "model", gstr(g, c, "STORAGES", idx, "MODEL", true, buf));
        put_str(custom, "device", gstr(g, c, "STORAGES", idx, "NAME", true, buf));
        put_str(custom, "interface", gstr(g, c, "STORAGES", idx, "INTERFACE", true, buf));
        put_str(custom, "firmware", gstr(g, c, "STORAGES", idx, "FIRMWARE", true, buf));
        put_int(custom, "size_mb", gint(g, c, "STORAGES", idx, "DISKSIZE", 0, INT64_C(1) << 40));
    }
}

/* The CONTROLLERS entry at a PCI slot; NULL when none. */
static xmlNode *controller_at(xmlNode *content, const char *slot)
{
    char norm[GI_BUS_LEN], buf[TEXT_MAX];

    for (xmlNode *c = content->children; c && slot[0]; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "CONTROLLERS") != 0)
            continue;
        if (xtext(xchild(c, "PCISLOT"), buf, sizeof buf) == 0 && gi_pci_normalize(buf, norm) == 0 &&
            strcmp(norm, slot) == 0)
            return c;
    }
    return NULL;
}

/* NICs: physical NETWORKS interfaces with a MAC (one per MAC), then
 * network-class CONTROLLERS with a real serial. */
static void nics(struct gctx *g, xmlNode *content)
{
    static const char *const virt[] = {"loopback", "bridge", "aggregate", "alias", "dialup", NULL};
    char mac[64], slot[GI_BUS_LEN], buf[FIELD_MAX + 1], key[96], fname[96];
    char cls[8], serial[FIELD_MAX + 1];
    int idx = -1;

    for (xmlNode *c = content->children; c; c = c->next) {
        json_t *r, *custom;
        xmlNode *ctl;
        int64_t speed;
        bool skip = false;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "NETWORKS") != 0)
            continue;
        idx++;
        if (strcmp(gstr(g, c, "NETWORKS", idx, "VIRTUALDEV", false, buf), "1") == 0)
            continue;
        gstr(g, c, "NETWORKS", idx, "TYPE", true, buf);
        for (const char *const *w = virt; *w; w++)
            skip |= strcasecmp(buf, *w) == 0;
        if (skip || !gstr(g, c, "NETWORKS", idx, "MACADDR", true, buf)[0])
            continue;
        if (!mac_norm(buf, mac, sizeof mac)) {
            if (strspn(buf, "0:-") != strlen(buf)) {
                field_name(fname, sizeof fname, "NETWORKS", idx, "MACADDR");
                warn(g, fname, "not a MAC address: \"%.40s\"; left absent", buf);
            }
            continue;
        }
        if (json_object_get(g->nic_by_mac, mac))
            continue; /* one entry per address of the same interface */
        snprintf(key, sizeof key, "nic/%s", mac);
        if ((r = child_new(g, "nic", key)) == NULL)
            return;
        json_object_set(g->nic_by_mac, mac, r);
        custom = json_object_get(r, "custom");
        gslot(g, c, "NETWORKS", idx, slot);
        put_str(custom, "mac", mac);
        put_str(custom, "interface", gstr(g, c, "NETWORKS", idx, "DESCRIPTION", true, buf));
        put_str(custom, "pci_slot", slot);
        put_str(custom, "type", gstr(g, c, "NETWORKS", idx, "TYPE", true, buf));
        put_str(custom, "driver", gstr(g, c, "NETWORKS", idx, "DRIVER", true, buf));
        put_str(custom, "firmware", gstr(g, c, "NETWORKS", idx, "FIRMWARE", true, buf));
        /* The agent writes -1 or 0 for an unknown speed. */
        speed = gint(g, c, "NETWORKS", idx, "SPEED", -1, INT64_C(1) << 32);
        put_int(custom, "speed_mbps", speed > 0 ? speed : -1);
        put_str(r, "vendor", gstr(g, c, "NETWORKS", idx, "MANUFACTURER", true, buf));
        put_str(r, "model", gstr(g, c, "NETWORKS", idx, "MODEL", true, buf));
        if ((ctl = controller_at(content, slot)) != NULL) {
            if (!json_object_get(r, "vendor"))
                put_str(r, "vendor", gstr(g, ctl, "CONTROLLERS", -1, "MANUFACTURER", true, buf));
            if (!json_object_get(r, "model"))
                put_str(r, "model", gstr(g, ctl, "CONTROLLERS", -1, "NAME", true, buf));
            put_str(r, "serial", gstr(g, ctl, "CONTROLLERS", -1, "SERIAL", true, buf));
        }
        if (slot[0] && !json_object_get(g->nic_by_slot, slot))
            json_object_set(g->nic_by_slot, slot, r);
    }
    idx = -1;
    for (xmlNode *c = content->children; c; c = c->next) {
        json_t *r;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "CONTROLLERS") != 0)
            continue;
        idx++;
        gstr(g, c, "CONTROLLERS", idx, "PCICLASS", true, buf);
        if (!hex_id(buf, 4, cls) || strncmp(cls, "02", 2) != 0)
            continue;
        if (!gstr(g, c, "CONTROLLERS", idx, "SERIAL", true, serial)[0])
            continue;
        gslot(g, c, "CONTROLLERS", idx, slot);
        if (slot[0] && json_object_get(g->nic_by_slot, slot))
            continue; /* already an interface's record, serial included */
        if (slot[0])
            snprintf(key, sizeof key, "nic/%s", slot);
        else
            snprintf(key, sizeof key, "nic/controller-%d", idx);
        if ((r = child_new(g, "nic", key)) == NULL)
            return;
        put_str(r, "serial", serial);
        put_str(r, "vendor", gstr(g, c, "CONTROLLERS", idx, "MANUFACTURER", true, buf));
        put_str(r, "model", gstr(g, c, "CONTROLLERS", idx, "NAME", true, buf));
        put_str(json_object_get(r, "custom"), "pci_slot", slot);
        if (slot[0])
            json_object_set(g->nic_by_slot, slot, r);
    }
}

/* Power supplies with a real serial. */
static void psus(struct gctx *g, xmlNode *content)
{
    char serial[FIELD_MAX + 1], buf[FIELD_MAX + 1], part[FIELD_MAX + 1], key[FIELD_MAX + 16];
    int idx = -1;

    for (xmlNode *c = content->children; c; c = c->next) {
        json_t *r, *custom;
        if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "POWERSUPPLIES") != 0)
            continue;
        idx++;
        if (!gstr(g, c, "POWERSUPPLIES", idx, "SERIALNUMBER", true, serial)[0])
            continue;
        snprintf(key, sizeof key, "psu/%s", serial);
        if ((r = child_new(g, "psu", key)) == NULL)
            return;
        custom = json_object_get(r, "custom");
        gstr(g, c, "POWERSUPPLIES", idx, "PARTNUM", true, part);
        put_str(r, "serial", serial);
        put_str(r, "vendor", gstr(g, c, "POWERSUPPLIES", idx, "MANUFACTURER", true, buf));
        if (!gstr(g, c, "POWERSUPPLIES", idx, "MODEL", true, buf)[0])
            gi_strlcpy(buf, part, sizeof buf);
        put_str(r, "model", buf);
        put_str(custom, "part_number", part);
        put_str(custom, "name", gstr(g, c, "POWERSUPPLIES", idx, "NAME", true, buf));
        put_int(custom, "power_max_w",
                gint(g, c, "POWERSUPPLIES", idx, "POWER_MAX", 0, INT64_C(1) << 20));
    }
}

/* ---- the message --------------------------------------------------------- */

static int inventory(struct gctx *g, xmlNode *root, char *err, size_t errlen)
{
    xmlNode *content = xchild(root, "CONTENT");
    int rc;

    if (content == NULL) {
        fail(err, errlen, "<REQUEST>: an INVENTORY without <CONTENT>");
        return GI_INVALID;
    }
    if ((g->m->records = json_array()) == NULL || (g->gpu_by_slot = json_object()) == NULL ||
        (g->nic_by_slot = json_object()) == NULL || (g->nic_by_mac = json_object()) == NULL ||
        (g->disk_by_serial = json_object()) == NULL)
        return GI_INTERNAL;
    if ((rc = machine_record(g, content)) != GI_OK)
        return rc;
    gpus_from_controllers(g, content);
    gpus_from_videos(g, content);
    /* A hypervisor guest's disks and NICs are virtual; its GPUs are the
     * host's, passed through. */
    if (!g->virtual_guest) {
        disks(g, content);
        nics(g, content);
        psus(g, content);
    }
    return GI_OK;
}

int glpi_parse(const char *xml, size_t len, struct glpi_msg *m, char *err, size_t errlen)
{
    xmlParserCtxtPtr ctxt = NULL;
    xmlDocPtr doc = NULL;
    xmlNode *root;
    struct gctx g;
    char buf[TEXT_MAX];
    int rc = GI_INVALID;

    memset(m, 0, sizeof *m);
    memset(&g, 0, sizeof g);
    g.m = m;
    if (len > GLPI_MAX_DECODED) {
        fail(err, errlen, "the message exceeds %u bytes", GLPI_MAX_DECODED);
        return GI_TOO_LARGE;
    }
    if ((m->warnings = json_array()) == NULL || (ctxt = xmlNewParserCtxt()) == NULL) {
        fail(err, errlen, "cannot start the XML parser");
        return GI_INTERNAL;
    }
    /* No NOENT (entities stay unexpanded), no DTD loading, no network;
     * libxml2's default depth and size limits apply (no XML_PARSE_HUGE). */
    doc = xmlCtxtReadMemory(ctxt, xml, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOBLANKS);
    if (doc == NULL) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        char msg[160] = "not well-formed";
        if (e && e->message) {
            gi_strlcpy(msg, e->message, sizeof msg);
            trim(msg);
        }
        fail(err, errlen, "line %d: XML: %s", e ? e->line : 0, msg);
        goto cleanup;
    }
    root = xmlDocGetRootElement(doc);
    if (root == NULL || strcmp((const char *)root->name, "REQUEST") != 0) {
        fail(err, errlen, "the root element is <%.40s>, not <REQUEST>",
             root ? (const char *)root->name : "");
        goto cleanup;
    }
    if (xtext(xchild(root, "QUERY"), buf, sizeof buf) < 0 || buf[0] == '\0' ||
        strlen(buf) > GLPI_QUERY_MAX || !gi_text_ok(buf)) {
        fail(err, errlen, "<QUERY> is missing, empty or longer than %d bytes", GLPI_QUERY_MAX);
        goto cleanup;
    }
    gi_strlcpy(m->query, buf, sizeof m->query);
    if (xtext(xchild(root, "DEVICEID"), buf, sizeof buf) < 0 || buf[0] == '\0' ||
        strlen(buf) > GLPI_DEVICEID_MAX || !gi_text_ok(buf) || strpbrk(buf, "\t\r\n")) {
        fail(err, errlen, "<DEVICEID> is missing, empty, longer than %d bytes or not one line",
             GLPI_DEVICEID_MAX);
        goto cleanup;
    }
    gi_strlcpy(m->deviceid, buf, sizeof m->deviceid);
    if (strcmp(m->query, "INVENTORY") == 0) {
        rc = inventory(&g, root, err, errlen);
        if (rc == GI_INTERNAL)
            fail(err, errlen, "out of memory");
        goto cleanup;
    }
    rc = GI_OK;
cleanup:
    json_decref(g.gpu_by_slot);
    json_decref(g.nic_by_slot);
    json_decref(g.nic_by_mac);
    json_decref(g.disk_by_serial);
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}

void glpi_msg_free(struct glpi_msg *m)
{
    if (m == NULL)
        return;
    json_decref(m->records);
    json_decref(m->warnings);
    memset(m, 0, sizeof *m);
}
