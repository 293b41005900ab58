/* The credentials an aws pull source signs its EC2 requests with:
 *  - credentials "keys" (the default): the config's access_key_id,
 *    secret_access_key and optional session_token;
 *  - credentials "instance": the EC2 instance metadata service (IMDSv2:
 *    PUT /latest/api/token, then the instance profile's role name from
 *    /latest/meta-data/iam/security-credentials/, then its temporary
 *    keys), at imds_endpoint (default http://169.254.169.254);
 *  - with role_arn, either of those is the base principal that calls STS
 *    AssumeRole (sts_endpoint, default https://sts.amazonaws.com, signed
 *    for service sts in us-east-1 or the region a regional endpoint
 *    names), with role_session_name (default gpuinv), external_id when
 *    given and DurationSeconds 3600; the role's temporary keys are used.
 * Temporary keys (from the metadata service or STS) are refreshed when
 * within AWS_CREDS_REFRESH_S of their Expiration. */
#ifndef GI_AWS_CREDS_H
#define GI_AWS_CREDS_H

#include "parse/aws.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AWS_CREDS_REFRESH_S 300
#define AWS_STS_DEFAULT "https://sts.amazonaws.com"
#define AWS_IMDS_DEFAULT "http://169.254.169.254"

struct aws_auth {
    const json_t *cfg; /* the source's config (borrowed) */
    struct aws_creds cur;
    bool temporary; /* from the metadata service or STS: expires */
};

/* Gets fresh credentials for a->cfg into a->cur. 0, or -1 with err
 * saying which step failed (the metadata service, or the role and the
 * STS error code) and a->cur cleared. */
int aws_auth_get(struct aws_auth *a, char *err, size_t errlen);

/* True when a->cur is temporary and within AWS_CREDS_REFRESH_S of its
 * expiry at now (unix seconds). */
bool aws_auth_due(const struct aws_auth *a, int64_t now);

/* Wipes the credentials. */
void aws_auth_clear(struct aws_auth *a);

/* The signing region of an STS endpoint: <r> of https://sts.<r>.amazonaws.com
 * (or .amazonaws.com.cn), else us-east-1 (the global endpoint, a proxy or
 * a stand-in). */
void aws_sts_region(const char *url, char *region, size_t len);

#endif
