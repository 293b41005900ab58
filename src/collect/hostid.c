/* Host identity; see hostid.h. */
#include "collect/hostid.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Reads the first line of root/rel into buf, trimmed; "" when unreadable. */
static void first_line(const char *root, const char *rel, char *buf, size_t len)
{
    char path[512];
    FILE *f;

    buf[0] = '\0';
    snprintf(path, sizeof path, "%s%s", strcmp(root, "/") == 0 ? "" : root, rel);
    if ((f = fopen(path, "r")) == NULL)
        return;
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--)
        buf[n - 1] = '\0';
    if (!gi_text_ok(buf))
        buf[0] = '\0';
}

/* DMI fields vendors fill with placeholders instead of a serial. */
static int junk_serial(const char *s)
{
    static const char *const junk[] = {"",
                                       "0",
                                       "000",
                                       "0000000000",
                                       "None",
                                       "Not Specified",
                                       "To Be Filled By O.E.M.",
                                       "Default string",
                                       "System Serial Number",
                                       NULL};
    for (const char *const *j = junk; *j; j++)
        if (strcmp(s, *j) == 0)
            return 1;
    return 0;
}

void hostid_read(const char *root, struct gi_host_obs *h)
{
    char buf[256];

    if (h->hostname[0] == '\0') {
        if (gethostname(buf, sizeof buf) == 0) {
            buf[sizeof buf - 1] = '\0';
            gi_strlcpy(h->hostname, buf, sizeof h->hostname);
        }
    }
    first_line(root, "/etc/machine-id", h->machine_id, sizeof h->machine_id);
    first_line(root, "/sys/class/dmi/id/product_serial", buf, sizeof buf);
    if (junk_serial(buf))
        first_line(root, "/sys/class/dmi/id/board_serial", buf, sizeof buf);
    if (!junk_serial(buf))
        gi_strlcpy(h->serial, buf, sizeof h->serial);
}
