/* The reporting host's identity: hostname, /etc/machine-id and the DMI
 * serials where readable (often root-only; absent is fine). */
#ifndef GI_HOSTID_H
#define GI_HOSTID_H

#include "core/observation.h"

/* Fills h from the system under root (normally "/"; tests pass a fixture
 * tree). Never fails: what cannot be read stays empty. */
void hostid_read(const char *root, struct gi_host_obs *h);

#endif
