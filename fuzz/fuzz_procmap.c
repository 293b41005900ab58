/* Fuzz target for the /proc parsers (src/collect/procmap.c): any status or
 * cgroup text yields a bounded, terminated container id and pod UID or
 * nothing. */
#include "collect/procmap.h"
#include "core/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char cid[128], pod[64];
    int64_t uid = -1;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (procmap_parse_uid(text, &uid) == GI_OK && uid < 0)
        abort();
    memset(cid, 'x', sizeof cid);
    memset(pod, 'x', sizeof pod);
    procmap_parse_cgroup(text, cid, sizeof cid, pod, sizeof pod);
    if (memchr(cid, '\0', sizeof cid) == NULL || memchr(pod, '\0', sizeof pod) == NULL)
        abort();
    free(text);
    return 0;
}
