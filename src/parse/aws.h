/* AWS EC2 Query API answers (XML): DescribeInstances pages,
 * DescribeInstanceTypes GPU information, and the error document. Pure
 * (bytes in, structs out, no I/O) and bounded.
 *
 * DescribeInstances: every instance of every reservation
 * (reservationSet/item/instancesSet/item), with the reservation's ownerId
 * as account; instanceId, instanceType (an "ml." prefix stripped),
 * instanceState code (masked with 0xFF, as AWS says the high byte is
 * internal) and name, launchTime (ISO 8601, "Z" or "+00:00", millis or
 * not), placement/availabilityZone, privateIpAddress, tagSet (absent when
 * the instance has no tags), the Name tag as name, and nextToken (absent
 * or empty on the last page). Elements are found by name, never by
 * position. The GPU fields are left unknown (gpu_count -1): they come
 * from the instance type.
 *
 * Degrades per field: an unreadable or too long value leaves that field
 * absent (counted in warnings) and never loses the instance; only an
 * instance without a usable id is skipped (counted in skipped). */
#ifndef GI_AWS_H
#define GI_AWS_H

#include "parse/cloud.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AWS_MAX_BODY (64u * 1024u * 1024u) /* bytes of one answer */
#define AWS_MAX_INSTANCES 100000           /* instances of one page */
#define AWS_MAX_TAGS 64                    /* tags kept per instance (AWS allows 50) */
#define AWS_TOKEN_LEN 4096
#define AWS_ERR_LEN 256

struct aws_instances {
    struct cloud_instance *items;
    size_t n, cap;
    size_t skipped;  /* instances without a usable id */
    size_t warnings; /* fields left absent */
    char next_token[AWS_TOKEN_LEN];
};

/* Appends the instances of one DescribeInstances answer to *out (which
 * starts zeroed) and sets out->next_token. region fills each instance's
 * region. GI_OK; GI_INVALID when the body is not such an answer (an error
 * document, not XML: err says which, and nothing is added); GI_TOO_LARGE
 * past AWS_MAX_BODY or AWS_MAX_INSTANCES. */
int aws_parse_instances(const char *data, size_t len, const char *region, struct aws_instances *out,
                        char *err, size_t errlen);
void aws_instances_free(struct aws_instances *out);

/* The GPUs of one instance type, from DescribeInstanceTypes gpuInfo. */
struct aws_gpu_type {
    char type[64];
    char model[128];    /* "<manufacturer> <name>" of the first GPU entry; "" when none */
    int count;          /* whole GPUs (all entries summed); a fractional type's logical count */
    int64_t memory_mib; /* per GPU; -1 absent */
    double partition;   /* GpuPartitionSize of a fractional GPU (0.125 ...); 1 whole */
};
struct aws_types {
    struct aws_gpu_type *items;
    size_t n, cap;
    char next_token[AWS_TOKEN_LEN];
};
/* Appends the types of one DescribeInstanceTypes answer; a type without
 * gpuInfo has count 0 and model "". Returns as aws_parse_instances. */
int aws_parse_types(const char *data, size_t len, struct aws_types *out, char *err, size_t errlen);
void aws_types_free(struct aws_types *out);

/* True when the body is an EC2 error document
 * (<Response><Errors><Error><Code>...) or an STS one
 * (<ErrorResponse><Error><Code>...); code and message filled. */
bool aws_parse_error(const char *data, size_t len, char *code, size_t clen, char *msg, size_t mlen);

#define AWS_KEY_ID_LEN 128
#define AWS_SECRET_LEN 256
#define AWS_SESSION_TOKEN_LEN 4096

/* Temporary (or configured) credentials: an access key id, its secret,
 * the session token sent as X-Amz-Security-Token ("" for long-term
 * keys), and when they expire (unix seconds; 0 never). */
struct aws_creds {
    char key_id[AWS_KEY_ID_LEN];
    char secret[AWS_SECRET_LEN];
    char token[AWS_SESSION_TOKEN_LEN];
    int64_t expires;
};

/* An STS AssumeRole answer:
 * AssumeRoleResponse/AssumeRoleResult/Credentials{AccessKeyId,
 * SecretAccessKey, SessionToken, Expiration}, into *out. GI_OK;
 * GI_INVALID when it is not such an answer or a credential is missing,
 * too long or not usable in a header (err says which; an STS error
 * document gives its code and message), *out zeroed; GI_TOO_LARGE past
 * AWS_MAX_BODY. */
int aws_parse_assume_role(const char *data, size_t len, struct aws_creds *out, char *err,
                          size_t errlen);

/* The instance metadata service's role credentials (JSON: Code "Success",
 * AccessKeyId, SecretAccessKey, Token, Expiration), into *out. Returns
 * as aws_parse_assume_role. */
int aws_parse_imds_creds(const char *data, size_t len, struct aws_creds *out, char *err,
                         size_t errlen);

/* The normalized state of an EC2 state code (already masked). */
enum cloud_state aws_state(int64_t code);

#endif
