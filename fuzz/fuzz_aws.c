/* libFuzzer target for the EC2 answer parsers. The first byte picks the
 * entry point (DescribeInstances, DescribeInstanceTypes, the error
 * document, STS AssumeRole, the metadata service's credentials); the
 * rest is the answer. Checks invariants the parsers
 * promise on every result. */
#include "core/status.h"
#include "parse/aws.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Aborts when a string field is not terminated within its buffer. */
#define CHECK_STR(f)                                                                               \
    do {                                                                                           \
        if (memchr((f), '\0', sizeof(f)) == NULL)                                                  \
            abort();                                                                               \
    } while (0)

static void check_instances(const struct aws_instances *l)
{
    CHECK_STR(l->next_token);
    for (size_t i = 0; i < l->n; i++) {
        const struct cloud_instance *v = &l->items[i];
        CHECK_STR(v->instance_id);
        CHECK_STR(v->name);
        CHECK_STR(v->account);
        CHECK_STR(v->zone);
        CHECK_STR(v->machine_type);
        CHECK_STR(v->state_raw);
        CHECK_STR(v->private_ip);
        if (v->instance_id[0] == '\0' || v->gpu_count != -1 || v->launch_time < 0 ||
            v->state < CLOUD_UNKNOWN || v->state > CLOUD_TERMINATED || v->ntags > AWS_MAX_TAGS ||
            (v->ntags > 0 && v->tags == NULL))
            abort();
        for (size_t k = 0; k < v->ntags; k++)
            if (!v->tags[k].key || !v->tags[k].value || !v->tags[k].key[0])
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[AWS_ERR_LEN], code[64], msg[128];
    int st;

    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0: {
        struct aws_instances l = {0};
        st =
            aws_parse_instances((const char *)data + 1, size - 1, "us-east-1", &l, err, sizeof err);
        if (st != GI_OK && (l.n != 0 || l.next_token[0]))
            abort();
        check_instances(&l);
        aws_instances_free(&l);
        break;
    }
    case 1: {
        struct aws_types t = {0};
        st = aws_parse_types((const char *)data + 1, size - 1, &t, err, sizeof err);
        if (st != GI_OK && t.n != 0)
            abort();
        for (size_t i = 0; i < t.n; i++) {
            CHECK_STR(t.items[i].type);
            CHECK_STR(t.items[i].model);
            if (!t.items[i].type[0] || t.items[i].count < 0 || t.items[i].count > 1024 ||
                t.items[i].partition <= 0 || t.items[i].partition > 1)
                abort();
        }
        aws_types_free(&t);
        break;
    }
    case 3:
    case 4: {
        struct aws_creds c;
        st = data[0] % 5 == 3
                 ? aws_parse_assume_role((const char *)data + 1, size - 1, &c, err, sizeof err)
                 : aws_parse_imds_creds((const char *)data + 1, size - 1, &c, err, sizeof err);
        CHECK_STR(c.key_id);
        CHECK_STR(c.secret);
        CHECK_STR(c.token);
        CHECK_STR(err);
        if (st == GI_OK && (!c.key_id[0] || !c.secret[0] || !c.token[0] || c.expires <= 0 ||
                            strchr(c.key_id, ':') || strpbrk(c.token, "\r\n")))
            abort();
        if (st != GI_OK && (c.key_id[0] || c.secret[0] || c.token[0]))
            abort();
        break;
    }
    default:
        if (aws_parse_error((const char *)data + 1, size - 1, code, sizeof code, msg, sizeof msg)) {
            CHECK_STR(code);
            CHECK_STR(msg);
        }
        break;
    }
    return 0;
}
