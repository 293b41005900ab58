/* libFuzzer target for the EC2 answer parsers. The first byte picks the
 * entry point (DescribeInstances, DescribeInstanceTypes, the error
 * document); the rest is the answer. Checks invariants the parsers
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
    switch (data[0] % 3) {
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
    default:
        if (aws_parse_error((const char *)data + 1, size - 1, code, sizeof code, msg, sizeof msg)) {
            CHECK_STR(code);
            CHECK_STR(msg);
        }
        break;
    }
    return 0;
}
