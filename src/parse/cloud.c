/* Cloud instances; see cloud.h. */
#include "parse/cloud.h"

#include <stdlib.h>

void cloud_instances_clear(struct cloud_instance *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        for (size_t t = 0; t < v[i].ntags; t++) {
            free(v[i].tags[t].key);
            free(v[i].tags[t].value);
        }
        free(v[i].tags);
        v[i].tags = NULL;
        v[i].ntags = 0;
    }
}
