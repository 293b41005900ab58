/* FusionInventory / GLPI agent messages: every fixture of tests/fixtures/glpi
 * into its asset records, the body encodings, junk values, and malformed or
 * hostile input. */
#include "unit.h"

#include <string.h>
#include <zlib.h>

#include "parse/glpi.h"

static char *fixture(const char *name, size_t *len) { return unit_fixture("glpi", name, len); }

/* Parses a fixture; asserts GI_OK. */
static void load(const char *name, struct glpi_msg *m)
{
    char err[GLPI_ERR_LEN] = "";
    size_t len;
    char *d = fixture(name, &len);

    if (glpi_parse(d, len, m, err, sizeof err) != GI_OK)
        fail_msg("%s: %s", name, err);
    free(d);
}

/* The record whose source_key ends with suffix; fails when none. */
static json_t *rec(const struct glpi_msg *m, const char *suffix)
{
    size_t i, sl = strlen(suffix);
    json_t *r;

    json_array_foreach(m->records, i, r) {
        const char *k = json_string_value(json_object_get(r, "source_key"));
        size_t kl = k ? strlen(k) : 0;
        if (kl >= sl && strcmp(k + kl - sl, suffix) == 0)
            return r;
    }
    fail_msg("no record with source_key ending in %s", suffix);
    return NULL;
}

static size_t count_kind(const struct glpi_msg *m, const char *kind)
{
    size_t i, n = 0;
    json_t *r;

    json_array_foreach(m->records, i, r)
        n += strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0;
    return n;
}

#define STR(o, k, want) assert_string_equal(json_string_value(json_object_get((o), (k))), (want))
#define INT(o, k, want) assert_int_equal(json_integer_value(json_object_get((o), (k))), (want))
#define ABSENT(o, k) assert_null(json_object_get((o), (k)))
#define CUSTOM(r) json_object_get((r), "custom")

/* The warning list names field. */
static bool warned(const struct glpi_msg *m, const char *field)
{
    size_t i;
    json_t *w;

    json_array_foreach(m->warnings, i, w)
        if (strcmp(json_string_value(json_object_get(w, "field")), field) == 0)
            return true;
    return false;
}

/* ---- fixtures ---- */

/* The agent's own output on a Debian 12 container: the machine (its
 * hardware: Docker reports the host's), its virtio disk and its NIC. */
static void agent_debian12(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("agent-debian12-docker.xml", &m);
    assert_string_equal(m.query, "INVENTORY");
    assert_string_equal(m.deviceid, "vm-2026-12-01-17-37-37");
    assert_string_equal(m.hostname, "vm");
    assert_int_equal(json_array_size(m.records), 3);
    r = json_array_get(m.records, 0);
    STR(r, "kind", "server");
    STR(r, "source_key", "vm-2026-12-01-17-37-37");
    ABSENT(r, "serial"); /* <SSN></SSN> */
    ABSENT(r, "tag");
    STR(CUSTOM(r), "vmsystem", "Docker");
    STR(CUSTOM(r), "cpu_model", "AMD EPYC");
    INT(CUSTOM(r), "cpu_count", 1);
    INT(CUSTOM(r), "cpu_cores", 2);
    INT(CUSTOM(r), "memory_mib", 24105);
    STR(CUSTOM(r), "os", "Debian GNU/Linux 12 (bookworm)");
    r = rec(&m, "/disk/1996635617236934");
    STR(r, "kind", "ssd");
    STR(r, "serial", "1996635617236934");
    STR(r, "vendor", "Red Hat, Inc.");
    STR(r, "parent_source_key", "vm-2026-12-01-17-37-37");
    INT(CUSTOM(r), "size_mb", 274877);
    /* eth0 once (three address entries); lo and the ifb devices are
     * virtual. */
    r = rec(&m, "/nic/02:fc:00:00:00:01");
    STR(r, "kind", "nic");
    STR(CUSTOM(r), "interface", "eth0");
    assert_int_equal(m.gpus, 0);
    assert_int_equal(json_array_size(m.warnings), 0);
    glpi_msg_free(&m);
}

static void gpu_server(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("gpu-server.xml", &m);
    r = json_array_get(m.records, 0);
    STR(r, "kind", "server");
    STR(r, "serial", "S411823X3A07654");
    STR(r, "vendor", "Supermicro");
    STR(r, "model", "SYS-821GE-TNHR");
    STR(r, "tag", "DC1-0042");
    STR(CUSTOM(r), "hostname", "gpu-node-042");
    STR(CUSTOM(r), "system_uuid", "8a1d3c2e-5b4f-11ee-9c1a-7cc2554f0a12");
    STR(CUSTOM(r), "cpu_model", "Intel(R) Xeon(R) Platinum 8480+");
    INT(CUSTOM(r), "cpu_count", 2);
    INT(CUSTOM(r), "cpu_cores", 112);
    INT(CUSTOM(r), "memory_mib", 2063937);
    STR(CUSTOM(r), "os", "Ubuntu 22.04.4 LTS");
    STR(CUSTOM(r), "vmsystem", "Physical");

    /* Two H100s (the ASPEED display and the NVSwitch bridge are not
     * GPUs); the VIDEOS entry of 18:00.0 merged into its controller. */
    assert_int_equal(m.gpus, 2);
    assert_int_equal(count_kind(&m, "gpu"), 2);
    r = rec(&m, "/gpu/0000:18:00.0");
    STR(r, "source_key", "gpu-node-042-2024-03-20-10-11-12/gpu/0000:18:00.0");
    STR(r, "vendor", "NVIDIA");
    STR(r, "model", "GH100 [H100 SXM5 80GB]");
    STR(r, "parent_tag", "DC1-0042");
    ABSENT(r, "serial");
    STR(CUSTOM(r), "pci_slot", "0000:18:00.0");
    STR(CUSTOM(r), "pci_id", "10de:2330");
    INT(CUSTOM(r), "memory_mib", 81559);
    r = rec(&m, "/gpu/0000:2a:00.0");
    STR(CUSTOM(r), "pci_id", "10de:2330"); /* VENDORID 10DE, slot without domain */

    /* Disks with serials, once each: not the multipath twin, the CD-ROM
     * or the USB stick. */
    assert_int_equal(count_kind(&m, "ssd"), 2);
    r = rec(&m, "/disk/S64HNE0T512345");
    STR(r, "serial", "S64HNE0T512345");
    STR(r, "model", "MZQL23T8HCLS-00A07");
    STR(CUSTOM(r), "device", "nvme0n1");
    INT(CUSTOM(r), "size_mb", 3840755);

    /* NICs: eno1 once, with its controller's vendor and name; the
     * InfiniBand port with its HCA's serial; the second HCA, without an
     * interface, by its serial; not lo or docker0. */
    assert_int_equal(count_kind(&m, "nic"), 3);
    r = rec(&m, "/nic/3c:ec:ef:12:34:56");
    STR(r, "vendor", "Intel Corporation");
    STR(r, "model", "Ethernet Controller X710 for 10GBASE-T");
    INT(CUSTOM(r), "speed_mbps", 10000);
    STR(CUSTOM(r), "pci_slot", "0000:1b:00.0");
    r = rec(&m, "/nic/00:00:10:29:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:12:34:56");
    STR(r, "serial", "MT2234X01234");
    STR(CUSTOM(r), "type", "infiniband");
    r = rec(&m, "/nic/0000:9a:00.0");
    STR(r, "serial", "MT2234X05678");

    /* PSUs with serials; the model from PARTNUM when MODEL is absent. */
    assert_int_equal(count_kind(&m, "psu"), 2);
    r = rec(&m, "/psu/P3K01GR23AT0124");
    STR(r, "model", "PWS-3K01G-2R");
    INT(CUSTOM(r), "power_max_w", 3000);
    assert_int_equal(json_array_size(m.records), 10);
    assert_int_equal(json_array_size(m.warnings), 0);
    glpi_msg_free(&m);
}

/* Junk SSN, vendor and model fall back to the board's; <ASSETTAG />,
 * empty elements and a zero UUID are absent; several VIDEOS without
 * slots or serials are one GPU each; bad numbers are warned and dropped. */
static void junk_serials(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("junk-serials.xml", &m);
    r = json_array_get(m.records, 0);
    STR(r, "serial", "NM1234567890AB");
    STR(r, "vendor", "ASRockRack");
    STR(r, "model", "ROMED8-2T");
    ABSENT(r, "tag");
    ABSENT(CUSTOM(r), "system_uuid");
    ABSENT(CUSTOM(r), "bios_date");
    INT(CUSTOM(r), "memory_mib", 131072); /* the modules' sum */
    assert_true(warned(&m, "MEMORIES[2]/CAPACITY"));

    assert_int_equal(m.gpus, 3);
    r = rec(&m, "/video/0");
    STR(r, "kind", "gpu");
    STR(r, "vendor", "NVIDIA");
    STR(r, "model", "NVIDIA GeForce RTX 3090");
    STR(r, "parent_serial", "NM1234567890AB");
    INT(CUSTOM(r), "memory_mib", 24576);
    r = rec(&m, "/video/1");
    ABSENT(CUSTOM(r), "memory_mib");
    assert_true(warned(&m, "VIDEOS[1]/MEMORY"));
    r = rec(&m, "/video/2");
    STR(r, "vendor", "AMD");
    /* The Matrox display is no GPU. */
    assert_int_equal(count_kind(&m, "gpu"), 3);

    /* A disk whose SERIALNUMBER is junk is left out; one with only
     * SERIAL is kept. */
    assert_int_equal(count_kind(&m, "ssd"), 1);
    STR(rec(&m, "/disk/22303C4B5D6E"), "serial", "22303C4B5D6E");
    assert_int_equal(count_kind(&m, "nic"), 0);
    assert_true(warned(&m, "NETWORKS[0]/MACADDR"));
    glpi_msg_free(&m);
}

/* Without a real serial or tag the machine is known by its device id,
 * and its children name it so. */
static void no_serial(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("no-serial.xml", &m);
    r = json_array_get(m.records, 0);
    ABSENT(r, "serial"); /* SSN O.E.M., MSN 0123456789 */
    ABSENT(r, "tag");    /* "No Asset Tag" */
    STR(r, "vendor", "Dell Inc.");
    STR(r, "source_key", "mi250-01-2024-06-01-00-00-00");
    r = rec(&m, "/gpu/0000:c1:00.0");
    STR(r, "vendor", "AMD");
    STR(r, "parent_source_key", "mi250-01-2024-06-01-00-00-00");
    ABSENT(r, "parent_serial");
    STR(CUSTOM(r), "pci_id", "1002:740c");
    STR(rec(&m, "/disk/S5XANA0R100200"), "parent_source_key", "mi250-01-2024-06-01-00-00-00");
    glpi_msg_free(&m);
}

/* A hypervisor guest: kind other; its passed-through GPU is kept, its
 * virtual disk and NIC are not. */
static void vm_guest(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("vm-guest.xml", &m);
    r = json_array_get(m.records, 0);
    STR(r, "kind", "other");
    STR(CUSTOM(r), "vmsystem", "QEMU");
    INT(CUSTOM(r), "cpu_count", 30);
    assert_int_equal(json_array_size(m.records), 2);
    r = rec(&m, "/gpu/0000:00:05.0");
    STR(r, "model", "GA100 [A100 SXM4 80GB]");
    glpi_msg_free(&m);
}

/* A device id with odd characters is kept as sent; a field too long, a tag
 * with a slash, a negative memory and a bad PCI slot are each dropped and
 * warned, and the record stays. */
static void odd_deviceid(void **state)
{
    struct glpi_msg m;
    json_t *r;
    const char *id = "rack 12/n\xc3\xb6"
                     "de \"\xc3\xa9t\xc3\xa9\" & <x>-2024-01-02-03-04-05";
    char key[512];

    (void)state;
    load("odd-deviceid.xml", &m);
    assert_string_equal(m.query, "INVENTORY"); /* trimmed */
    assert_string_equal(m.deviceid, id);
    r = json_array_get(m.records, 0);
    STR(r, "source_key", id);
    STR(r, "serial", "CZ2049 0XYZ"); /* CDATA */
    STR(r, "vendor", "HPE");
    ABSENT(r, "model");
    ABSENT(r, "tag");
    ABSENT(CUSTOM(r), "memory_mib");
    assert_true(warned(&m, "BIOS/SMODEL"));
    assert_true(warned(&m, "BIOS/ASSETTAG"));
    assert_true(warned(&m, "HARDWARE/MEMORY"));
    assert_true(warned(&m, "CONTROLLERS[0]/PCISLOT"));
    assert_int_equal(m.gpus, 2);
    snprintf(key, sizeof key, "%s/gpu/0000:41:00.0", id);
    r = rec(&m, "/gpu/0000:41:00.0");
    STR(r, "source_key", key);
    STR(r, "serial", "1652823012345");
    STR(r, "parent_serial", "CZ2049 0XYZ");
    ABSENT(CUSTOM(rec(&m, "/gpu/controller-0")), "pci_slot");
    glpi_msg_free(&m);
}

static void prolog(void **state)
{
    struct glpi_msg m;

    (void)state;
    load("prolog.xml", &m);
    assert_string_equal(m.query, "PROLOG");
    assert_string_equal(m.deviceid, "gpu-node-042-2024-03-20-10-11-12");
    assert_null(m.records);
    glpi_msg_free(&m);
}

/* Entities are never expanded: an external one reads no file, an
 * internal one stays out of the text; the predefined ones are text. */
static void entities(void **state)
{
    struct glpi_msg m;
    json_t *r;

    (void)state;
    load("entities.xml", &m);
    r = json_array_get(m.records, 0);
    STR(r, "serial", "BOARD-0001"); /* SSN held only the reference */
    ABSENT(r, "vendor");
    STR(r, "model", "R&D box");
    glpi_msg_free(&m);
}

/* Nested entities (the "billion laughs") are refused by libxml2's own
 * checks; nothing is expanded either way. */
static void entity_loop(void **state)
{
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "";
    const char *xml =
        "<?xml version=\"1.0\"?><!DOCTYPE REQUEST [<!ENTITY a \"aaaaaaaaaa\">"
        "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;\">]>"
        "<REQUEST><QUERY>INVENTORY</QUERY><DEVICEID>d&c;</DEVICEID><CONTENT><BIOS>"
        "<SMODEL>&c;</SMODEL></BIOS></CONTENT></REQUEST>";
    int rc = glpi_parse(xml, strlen(xml), &m, err, sizeof err);

    (void)state;
    if (rc == GI_OK) {
        assert_string_equal(m.deviceid, "d");
        ABSENT(json_array_get(m.records, 0), "model");
    } else {
        assert_status(rc, GI_INVALID);
        assert_non_null(strstr(err, "XML"));
    }
    glpi_msg_free(&m);
}

/* ---- structure ---- */

static void expect_invalid(const char *xml, const char *needle)
{
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "";

    assert_status(glpi_parse(xml, strlen(xml), &m, err, sizeof err), GI_INVALID);
    if (strstr(err, needle) == NULL)
        fail_msg("error \"%s\" does not name %s", err, needle);
    glpi_msg_free(&m);
}

static void malformed(void **state)
{
    (void)state;
    expect_invalid("<REQUEST><QUERY>PROLOG</QUERY>", "XML");
    expect_invalid("", "XML");
    expect_invalid("<REPLY><RESPONSE>SEND</RESPONSE></REPLY>", "<REQUEST>");
    expect_invalid("<REQUEST><DEVICEID>a</DEVICEID></REQUEST>", "QUERY");
    expect_invalid("<REQUEST><QUERY>PROLOG</QUERY></REQUEST>", "DEVICEID");
    expect_invalid("<REQUEST><QUERY>PROLOG</QUERY><DEVICEID> </DEVICEID></REQUEST>", "DEVICEID");
    expect_invalid("<REQUEST><QUERY>INVENTORY</QUERY><DEVICEID>a</DEVICEID></REQUEST>", "CONTENT");
    expect_invalid("<REQUEST><QUERY>PROLOG</QUERY><DEVICEID>a&#1;b</DEVICEID></REQUEST>", "XML");
}

/* An INVENTORY with an empty CONTENT is the machine alone. */
static void empty_content(void **state)
{
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "";
    const char *xml = "<REQUEST><QUERY>INVENTORY</QUERY><DEVICEID>h-1</DEVICEID><CONTENT/>"
                      "</REQUEST>";

    (void)state;
    assert_status(glpi_parse(xml, strlen(xml), &m, err, sizeof err), GI_OK);
    assert_int_equal(json_array_size(m.records), 1);
    STR(json_array_get(m.records, 0), "kind", "server");
    STR(json_array_get(m.records, 0), "source_key", "h-1");
    glpi_msg_free(&m);
}

/* A machine with more components than GLPI_MAX_RECORDS keeps the first
 * ones and says so. */
static void record_bound(void **state)
{
    size_t cap = (GLPI_MAX_RECORDS + 10) * 120 + 256, n = 0;
    char *xml = malloc(cap);
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "";

    (void)state;
    assert_non_null(xml);
    n += (size_t)snprintf(xml + n, cap - n,
                          "<REQUEST><QUERY>INVENTORY</QUERY><DEVICEID>big</DEVICEID><CONTENT>");
    for (int i = 0; i < GLPI_MAX_RECORDS + 10; i++)
        n += (size_t)snprintf(xml + n, cap - n,
                              "<STORAGES><SERIALNUMBER>SN%08d</SERIALNUMBER></STORAGES>", i);
    n += (size_t)snprintf(xml + n, cap - n, "</CONTENT></REQUEST>");
    assert_status(glpi_parse(xml, n, &m, err, sizeof err), GI_OK);
    assert_int_equal(json_array_size(m.records), GLPI_MAX_RECORDS);
    assert_true(warned(&m, "CONTENT"));
    glpi_msg_free(&m);
    free(xml);
}

/* A source_key holds 256 bytes: with a long DEVICEID a component's key
 * is its suffix alone (the source, "glpi:" DEVICEID, still tells whose). */
static void long_deviceid(void **state)
{
    char id[GLPI_DEVICEID_MAX + 1], xml[1024];
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "";
    int n;

    (void)state;
    memset(id, 'h', GLPI_DEVICEID_MAX);
    id[GLPI_DEVICEID_MAX] = '\0';
    n = snprintf(xml, sizeof xml,
                 "<REQUEST><QUERY>INVENTORY</QUERY><DEVICEID>%s</DEVICEID><CONTENT><CONTROLLERS>"
                 "<PCICLASS>0302</PCICLASS><VENDORID>10de</VENDORID><PCISLOT>3b:00.0</PCISLOT>"
                 "</CONTROLLERS></CONTENT></REQUEST>",
                 id);
    assert_status(glpi_parse(xml, (size_t)n, &m, err, sizeof err), GI_OK);
    STR(json_array_get(m.records, 0), "source_key", id);
    STR(json_array_get(m.records, 1), "source_key", "gpu/0000:3b:00.0");
    glpi_msg_free(&m);
    /* One byte longer is refused, by name. */
    n = snprintf(xml, sizeof xml,
                 "<REQUEST><QUERY>PROLOG</QUERY><DEVICEID>%sh</DEVICEID></REQUEST>", id);
    assert_status(glpi_parse(xml, (size_t)n, &m, err, sizeof err), GI_INVALID);
    assert_non_null(strstr(err, "DEVICEID"));
    glpi_msg_free(&m);
}

/* ---- junk ---- */

static void junk(void **state)
{
    static const char *const junk_values[] = {"",
                                              "   ",
                                              "000",
                                              "0",
                                              "0000000000",
                                              "To be filled by O.E.M.",
                                              "To Be Filled By O.E.M.",
                                              "Default string",
                                              "0123456789",
                                              "123456789",
                                              "System Serial Number",
                                              "Not Specified",
                                              "FFFFFFFF",
                                              "ffff-ffff",
                                              "00000000-0000-0000-0000-000000000000",
                                              "N/A",
                                              "None",
                                              "No Asset Tag",
                                              "....",
                                              "OEM",
                                              NULL};
    static const char *const real[] = {"S411823X3A07654", "NM1234567890AB", "1996635617236934",
                                       "CZ2049 0XYZ",     "DC1-0042",       "12",
                                       "0123456780",      "MT2234X01234",   NULL};

    (void)state;
    for (const char *const *s = junk_values; *s; s++)
        if (!glpi_is_junk(*s))
            fail_msg("\"%s\" should be junk", *s);
    for (const char *const *s = real; *s; s++)
        if (glpi_is_junk(*s))
            fail_msg("\"%s\" should not be junk", *s);
}

/* ---- bodies ---- */

static void round_trip(enum glpi_encoding enc, const char *content_type)
{
    size_t len, zlen, xlen;
    char *d = fixture("gpu-server.xml", &len), *xml = NULL, err[GLPI_ERR_LEN] = "";
    unsigned char *z = NULL;

    assert_status(glpi_encode(d, len, enc, &z, &zlen), GI_OK);
    assert_int_equal(glpi_detect(z, zlen, content_type), enc);
    assert_status(glpi_decode(z, zlen, enc, GLPI_MAX_DECODED, &xml, &xlen, err, sizeof err), GI_OK);
    assert_int_equal(xlen, len);
    assert_memory_equal(xml, d, len);
    assert_int_equal(xml[xlen], '\0');
    /* Truncated: refused, never a partial message. */
    free(xml);
    xml = NULL;
    if (enc != GLPI_PLAIN) {
        assert_status(glpi_decode(z, zlen / 2, enc, GLPI_MAX_DECODED, &xml, &xlen, err, sizeof err),
                      GI_INVALID);
        assert_null(xml);
        assert_non_null(strstr(err, "truncated"));
    }
    free(z);
    free(d);
}

static void bodies(void **state)
{
    size_t len, zlen;
    char *d = fixture("prolog.xml", &len);
    unsigned char *z = NULL;

    (void)state;
    round_trip(GLPI_ZLIB, "application/x-compress-zlib");
    round_trip(GLPI_ZLIB, NULL); /* told by its magic bytes alone */
    round_trip(GLPI_GZIP, "application/x-compress-gzip");
    round_trip(GLPI_GZIP, "application/xml");
    round_trip(GLPI_PLAIN, "application/xml");
    round_trip(GLPI_PLAIN, "application/x-compress-zlib"); /* mislabelled plain XML */
    /* The agent recognizes a zlib reply by 78 9c, a gzip one by 1f 8b 08. */
    assert_status(glpi_encode(d, len, GLPI_ZLIB, &z, &zlen), GI_OK);
    assert_int_equal(z[0], 0x78);
    assert_int_equal(z[1], 0x9c);
    free(z);
    assert_status(glpi_encode(d, len, GLPI_GZIP, &z, &zlen), GI_OK);
    assert_memory_equal(z, "\x1f\x8b\x08", 3);
    free(z);
    free(d);
}

/* Raw deflate is told only by the Content-Type of zlib. */
static void raw_deflate(void **state)
{
    const char *text = "<REQUEST><QUERY>PROLOG</QUERY><DEVICEID>d</DEVICEID></REQUEST>";
    unsigned char buf[512];
    char *xml = NULL, err[GLPI_ERR_LEN] = "";
    size_t xlen;
    z_stream z;

    (void)state;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)strlen(text);
    z.next_out = buf;
    z.avail_out = sizeof buf;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(glpi_detect(buf, z.total_out, "application/x-compress-zlib"), GLPI_DEFLATE);
    assert_status(glpi_decode(buf, z.total_out, GLPI_DEFLATE, 4096, &xml, &xlen, err, sizeof err),
                  GI_OK);
    assert_string_equal(xml, text);
    free(xml);
    deflateEnd(&z);
}

/* A body that inflates past the bound stops there: a zip bomb costs at
 * most the bound. Corrupt data is refused by name. */
static void bomb_and_corrupt(void **state)
{
    size_t big = 8u << 20, zlen;
    char *zeros = calloc(1, big), *xml = NULL, err[GLPI_ERR_LEN] = "";
    unsigned char *z = NULL;
    size_t xlen;

    (void)state;
    assert_non_null(zeros);
    zeros[0] = '<';
    assert_status(glpi_encode(zeros, big, GLPI_ZLIB, &z, &zlen), GI_OK);
    assert_true(zlen < 64 * 1024);
    assert_status(glpi_decode(z, zlen, GLPI_ZLIB, 1u << 20, &xml, &xlen, err, sizeof err),
                  GI_TOO_LARGE);
    assert_null(xml);
    assert_non_null(strstr(err, "exceeds"));
    /* Exactly at the bound is accepted. */
    assert_status(glpi_decode(z, zlen, GLPI_ZLIB, big, &xml, &xlen, err, sizeof err), GI_OK);
    assert_int_equal(xlen, big);
    free(xml);
    xml = NULL;
    z[zlen / 2] ^= 0x55;
    z[zlen / 2 + 1] ^= 0xaa;
    assert_int_not_equal(glpi_decode(z, zlen, GLPI_ZLIB, big, &xml, &xlen, err, sizeof err), GI_OK);
    assert_null(xml);
    /* A plain body over the bound. */
    assert_status(glpi_decode(zeros, 100, GLPI_PLAIN, 99, &xml, &xlen, err, sizeof err),
                  GI_TOO_LARGE);
    free(z);
    free(zeros);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(agent_debian12),   cmocka_unit_test(gpu_server),
        cmocka_unit_test(junk_serials),     cmocka_unit_test(no_serial),
        cmocka_unit_test(vm_guest),         cmocka_unit_test(odd_deviceid),
        cmocka_unit_test(prolog),           cmocka_unit_test(entities),
        cmocka_unit_test(entity_loop),      cmocka_unit_test(malformed),
        cmocka_unit_test(empty_content),    cmocka_unit_test(record_bound),
        cmocka_unit_test(long_deviceid),    cmocka_unit_test(junk),
        cmocka_unit_test(bodies),           cmocka_unit_test(raw_deflate),
        cmocka_unit_test(bomb_and_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
