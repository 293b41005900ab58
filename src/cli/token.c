/* `gpuinv token` and `gpuinv user`: credential administration straight on
 * the database, for bootstrapping and automation. */
#include "cli/cli.h"
#include "core/status.h"
#include "core/util.h"
#include "http/auth.h"
#include "store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char token_usage[] =
    "usage: gpuinv token create --db PATH --role admin|editor|viewer --name NAME\n"
    "       gpuinv token create --db PATH --role pusher --name NAME --source SOURCE\n"
    "                           [--team TEAM] [--env ENV] [--cluster CLUSTER]\n"
    "                           [--hosts PATTERNS] [--limit-cluster CLUSTER]\n"
    "       (either form also [--datacenter DC]..., not for admin)\n"
    "       gpuinv token scope --db PATH --id ID (--datacenter DC... | --all-datacenters)\n"
    "       gpuinv token list --db PATH\n"
    "       gpuinv token revoke --db PATH --id ID\n"
    "\n"
    "A new token is printed once; only its hash is stored. A pusher token may only\n"
    "push observations as SOURCE (created if new); --team/--env/--cluster become the\n"
    "source's defaults for the GPUs it reports (labels a host reports about itself\n"
    "win). --hosts 'fra1-*,ams1-*' confines the token to host names matching one of\n"
    "the patterns and --limit-cluster to hosts of that cluster: a batch for any\n"
    "other host is refused with 403.\n"
    "\n"
    "--datacenter (a data center's name or id, repeatable) confines a token to those\n"
    "data centers: it reads, lists and changes only what is in them. 'scope' changes\n"
    "the data centers of an existing token; --all-datacenters lifts the confinement.\n"
    "\n"
    "--db is a SQLite file or a PostgreSQL URL (postgres://...), as for 'gpuinv\n"
    "serve'; without it, GPUINV_DB.\n";

static const char user_usage[] =
    "usage: gpuinv user set --db PATH --name NAME --role admin|editor|viewer\n"
    "\n"
    "Reads the password from GPUINV_PASSWORD, else from the first line of stdin.\n";

struct cred_args {
    const char *db, *name, *role, *source, *team, *env, *cluster, *hosts, *limit_cluster;
    int64_t id;
    const char *dcs[GI_TOKEN_DCS_MAX]; /* --datacenter, names or ids */
    int n_dcs;
    bool all_dcs; /* --all-datacenters */
};

/* Parses the shared options; returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, const char *usage, struct cred_args *a)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"name", required_argument, NULL, 'n'},
        {"role", required_argument, NULL, 'r'},
        {"id", required_argument, NULL, 'i'},
        {"source", required_argument, NULL, 's'},
        {"team", required_argument, NULL, 'T'},
        {"env", required_argument, NULL, 'E'},
        {"cluster", required_argument, NULL, 'C'},
        {"hosts", required_argument, NULL, 'H'},
        {"limit-cluster", required_argument, NULL, 'L'},
        {"datacenter", required_argument, NULL, 'D'},
        {"all-datacenters", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    memset(a, 0, sizeof *a);
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            a->db = optarg;
            break;
        case 'n':
            a->name = optarg;
            break;
        case 'r':
            a->role = optarg;
            break;
        case 's':
            a->source = optarg;
            break;
        case 'T':
            a->team = optarg;
            break;
        case 'E':
            a->env = optarg;
            break;
        case 'C':
            a->cluster = optarg;
            break;
        case 'H':
            a->hosts = optarg;
            break;
        case 'L':
            a->limit_cluster = optarg;
            break;
        case 'D':
            if (a->n_dcs == GI_TOKEN_DCS_MAX) {
                fprintf(stderr, "at most %d --datacenter options\n", GI_TOKEN_DCS_MAX);
                return 2;
            }
            a->dcs[a->n_dcs++] = optarg;
            break;
        case 'A':
            a->all_dcs = true;
            break;
        case 'i':
            if (gi_parse_int64(optarg, 1, INT64_MAX, &a->id) != GI_OK) {
                fprintf(stderr, "--id must be a positive whole number\n");
                return 2;
            }
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unexpected argument '%s'\n%s", argv[optind], usage);
        return 2;
    }
    if (a->db == NULL && getenv("GPUINV_DB") && *getenv("GPUINV_DB"))
        a->db = getenv("GPUINV_DB");
    if (a->db == NULL) {
        fprintf(stderr, "--db (or GPUINV_DB) is required\n%s", usage);
        return 2;
    }
    return -1;
}

/* The kind of the source named `name` into kind (empty when there is no
 * such source); GI_OK unless the store fails. */
static int source_kind(struct store *st, const char *name, char *kind, size_t len)
{
    json_t *items = NULL, *s;
    size_t i;
    int rc = store_source_list(st, 0, NULL, &items);

    kind[0] = '\0';
    if (rc != GI_OK)
        return rc;
    json_array_foreach(items, i, s) {
        const char *n = json_string_value(json_object_get(s, "name"));
        const char *k = json_string_value(json_object_get(s, "kind"));
        if (n && k && strcmp(n, name) == 0)
            snprintf(kind, len, "%s", k);
    }
    json_decref(items);
    return GI_OK;
}

/* The ids of the data centers --datacenter names (a name, else an id),
 * deduplicated, into dcs; says which one is unknown otherwise. */
static int dcs_resolve(struct store *st, const struct cred_args *a, int64_t *dcs, int *n)
{
    *n = 0;
    for (int i = 0; i < a->n_dcs; i++) {
        int64_t id = 0;
        bool dup = false;
        int rc = store_dc_id_by_name(st, a->dcs[i], &id);
        if (rc == GI_NOT_FOUND && gi_parse_int64(a->dcs[i], 1, INT64_MAX, &id) == GI_OK) {
            json_t *dc = NULL;
            rc = store_dc_get(st, id, &dc);
            json_decref(dc);
        }
        if (rc == GI_NOT_FOUND)
            fprintf(stderr, "--datacenter %s: no data center has this name or id\n", a->dcs[i]);
        else if (rc != GI_OK)
            fprintf(stderr, "could not read data center %s: %s\n", a->dcs[i], gi_status_name(rc));
        if (rc != GI_OK)
            return rc;
        for (int k = 0; k < *n; k++)
            dup = dup || dcs[k] == id;
        if (!dup)
            dcs[(*n)++] = id;
    }
    return GI_OK;
}

/* Says why a pusher token cannot report as `name`, a source of `kind`. */
static void not_push(const char *name, const char *kind)
{
    fprintf(stderr, "source %s is a %s source; a pusher token needs a push source name\n", name,
            kind[0] ? kind : "non-push");
}

/* Creates the token of `a` (role `role`) and prints its secret. A pusher
 * token's source is checked before anything is written, and a token whose
 * binding fails afterwards is revoked, so a failed create leaves no usable
 * token behind. */
static int token_create(struct store *st, const struct cred_args *a, enum gi_role role)
{
    char secret[AUTH_TOKEN_LEN], hash[AUTH_HASH_LEN], kind[32];
    int64_t id, sid, dcs[GI_TOKEN_DCS_MAX];
    int rc, n_dcs = 0;

    if ((rc = dcs_resolve(st, a, dcs, &n_dcs)) != GI_OK)
        return rc;
    if (a->source) {
        if ((rc = source_kind(st, a->source, kind, sizeof kind)) != GI_OK) {
            fprintf(stderr, "could not create token: %s\n", gi_status_name(rc));
            return rc;
        }
        if (kind[0] && strcmp(kind, "push") != 0) {
            not_push(a->source, kind);
            return GI_CONFLICT;
        }
    }
    auth_token_new(secret);
    auth_hash(secret, hash);
    if ((rc = store_token_create(st, "cli", a->name, role, hash, &id)) != GI_OK) {
        fprintf(stderr, "could not create token: %s\n", gi_status_name(rc));
        return rc;
    }
    if (n_dcs > 0 && (rc = store_token_set_datacenters(st, "cli", id, dcs, n_dcs)) != GI_OK) {
        store_token_revoke(st, "cli", id);
        fprintf(stderr, "could not create token: %s\n", gi_status_name(rc));
        return rc;
    }
    if (a->source) {
        rc = store_source_ensure(st, a->source, "push", a->team, a->env, a->cluster, &sid);
        if (rc == GI_OK)
            rc = store_token_set_source(st, id, sid);
        if (rc == GI_OK && (a->hosts || a->limit_cluster))
            rc = store_token_set_scope(st, id, a->hosts, a->limit_cluster);
        if (rc != GI_OK) {
            store_token_revoke(st, "cli", id);
            if (rc == GI_CONFLICT)
                not_push(a->source, "");
            else
                fprintf(stderr, "could not create token: %s\n", gi_status_name(rc));
            return rc;
        }
    }
    printf("%s\n", secret);
    return GI_OK;
}

/* Sets the data centers of token a->id (none with --all-datacenters). */
static int token_scope(struct store *st, const struct cred_args *a)
{
    json_t *tok = NULL;
    int64_t dcs[GI_TOKEN_DCS_MAX];
    enum gi_role role;
    int rc, n_dcs = 0;

    if ((rc = store_token_get(st, a->id, &tok)) != GI_OK) {
        fprintf(stderr, "could not read token %lld: %s\n", (long long)a->id, gi_status_name(rc));
        return rc;
    }
    if (!json_is_null(json_object_get(tok, "revoked_at"))) {
        fprintf(stderr, "token %lld is revoked\n", (long long)a->id);
        rc = GI_CONFLICT;
    } else if (gi_role_parse(json_string_value(json_object_get(tok, "role")), &role) == GI_OK &&
               role == GI_ROLE_ADMIN && a->n_dcs > 0) {
        fprintf(stderr, "an admin token is not confined to data centers\n");
        rc = GI_INVALID;
    } else if ((rc = dcs_resolve(st, a, dcs, &n_dcs)) == GI_OK &&
               (rc = store_token_set_datacenters(st, "cli", a->id, dcs, n_dcs)) != GI_OK) {
        fprintf(stderr, "could not change token %lld: %s\n", (long long)a->id, gi_status_name(rc));
    }
    json_decref(tok);
    return rc;
}

/* The data centers of a listed token as "3,7", or "all". */
static void dcs_text(const json_t *t, char *buf, size_t len)
{
    const json_t *a = json_object_get(t, "datacenters"), *v;
    size_t i, n = 0;

    gi_strlcpy(buf, json_array_size(a) ? "" : "all", len);
    json_array_foreach(a, i, v) {
        int w =
            snprintf(buf + n, len - n, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
}

static int open_store(const char *db, struct store **st)
{
    if (auth_init() != GI_OK || store_open(db, 1, st) != GI_OK) {
        fprintf(stderr, "cannot open database %s\n", db);
        return 1;
    }
    return 0;
}

int cli_token(int argc, char **argv)
{
    struct cred_args a;
    struct store *st = NULL;
    enum gi_role role;
    int code, rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fputs(token_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "create") && strcmp(argv[1], "list") && strcmp(argv[1], "revoke") &&
        strcmp(argv[1], "scope")) {
        fprintf(stderr, "gpuinv token: unknown action '%s'\n%s", argv[1], token_usage);
        return 2;
    }
    if ((code = parse_args(argc, argv, token_usage, &a)) >= 0)
        return code;
    if (strcmp(argv[1], "create") == 0) {
        if (!a.name || !a.role || gi_role_parse(a.role, &role) != GI_OK || strlen(a.name) > 128 ||
            !gi_text_ok(a.name)) {
            fprintf(stderr, "create needs --name (text) and --role admin|editor|viewer|pusher\n");
            return 2;
        }
        if ((role == GI_ROLE_PUSHER) != (a.source != NULL)) {
            fprintf(stderr, "--source is required for, and only for, a pusher token\n");
            return 2;
        }
        if (a.source && (strlen(a.source) > 63 || !gi_text_ok(a.source) || !*a.source)) {
            fprintf(stderr, "--source must be text of 1..63 bytes\n");
            return 2;
        }
        if ((a.hosts || a.limit_cluster) && role != GI_ROLE_PUSHER) {
            fprintf(stderr, "--hosts and --limit-cluster confine only a pusher token\n");
            return 2;
        }
        if (a.hosts && !gi_host_patterns_valid(a.hosts)) {
            fprintf(stderr, "--hosts must be patterns such as 'fra1-*,ams1-*' (letters, digits, "
                            "'.', '-', '_', '*', '?'; under 512 bytes)\n");
            return 2;
        }
        if (a.limit_cluster &&
            (!*a.limit_cluster || strlen(a.limit_cluster) > 127 || !gi_text_ok(a.limit_cluster))) {
            fprintf(stderr, "--limit-cluster must be text of 1..127 bytes\n");
            return 2;
        }
        if (a.all_dcs || (a.n_dcs > 0 && role == GI_ROLE_ADMIN)) {
            fprintf(stderr, a.all_dcs ? "--all-datacenters is for 'scope'; a new token without "
                                        "--datacenter reaches every data center\n"
                                      : "an admin token is not confined to data centers\n");
            return 2;
        }
        if ((code = open_store(a.db, &st)))
            return code;
        rc = token_create(st, &a, role);
    } else if (strcmp(argv[1], "scope") == 0) {
        if (a.id == 0 || (a.n_dcs > 0) == a.all_dcs) {
            fprintf(stderr, "scope needs --id and either --datacenter (repeatable) or "
                            "--all-datacenters\n");
            return 2;
        }
        if ((code = open_store(a.db, &st)))
            return code;
        rc = token_scope(st, &a);
    } else if (strcmp(argv[1], "list") == 0) {
        json_t *items = NULL;
        size_t i;
        json_t *t;
        if ((code = open_store(a.db, &st)))
            return code;
        rc = store_token_list(st, &items);
        if (rc == GI_OK) {
            printf("%-6s %-24s %-8s %-21s %-21s %s\n", "ID", "NAME", "ROLE", "CREATED", "REVOKED",
                   "DATACENTERS");
            json_array_foreach(items, i, t) {
                const char *rev = json_string_value(json_object_get(t, "revoked_at"));
                char dcs[GI_TOKEN_DCS_MAX * 21 + 1];
                dcs_text(t, dcs, sizeof dcs);
                printf("%-6lld %-24s %-8s %-21s %-21s %s\n",
                       (long long)json_integer_value(json_object_get(t, "id")),
                       json_string_value(json_object_get(t, "name")),
                       json_string_value(json_object_get(t, "role")),
                       json_string_value(json_object_get(t, "created_at")), rev ? rev : "-", dcs);
            }
        }
        json_decref(items);
    } else {
        if (a.id == 0) {
            fprintf(stderr, "revoke needs --id\n");
            return 2;
        }
        if ((code = open_store(a.db, &st)))
            return code;
        rc = store_token_revoke(st, "cli", a.id);
        if (rc != GI_OK)
            fprintf(stderr, "could not revoke token %lld: %s\n", (long long)a.id,
                    gi_status_name(rc));
    }
    store_close(st);
    return rc == GI_OK ? 0 : 1;
}

int cli_user(int argc, char **argv)
{
    struct cred_args a;
    struct store *st = NULL;
    enum gi_role role;
    char line[1024], pwhash[AUTH_PWHASH_LEN];
    const char *pw = getenv("GPUINV_PASSWORD");
    int code, rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fputs(user_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "set") != 0) {
        fprintf(stderr, "gpuinv user: unknown action '%s'\n%s", argv[1], user_usage);
        return 2;
    }
    if ((code = parse_args(argc, argv, user_usage, &a)) >= 0)
        return code;
    if (!a.name || !a.role || gi_role_parse(a.role, &role) != GI_OK || role == GI_ROLE_PUSHER) {
        fprintf(stderr, "set needs --name and --role admin|editor|viewer\n");
        return 2;
    }
    if (pw == NULL) {
        if (fgets(line, sizeof line, stdin) == NULL) {
            fprintf(stderr, "no password on stdin\n");
            return 2;
        }
        line[strcspn(line, "\r\n")] = '\0';
        pw = line;
    }
    if (strlen(pw) < 8) {
        fprintf(stderr, "the password must be at least 8 characters\n");
        return 2;
    }
    if ((code = open_store(a.db, &st)))
        return code;
    rc = auth_password_hash(pw, pwhash);
    if (rc == GI_OK)
        rc = store_user_set(st, a.name, role, pwhash);
    if (rc != GI_OK)
        fprintf(stderr, "could not set user: %s\n", gi_status_name(rc));
    store_close(st);
    return rc == GI_OK ? 0 : 1;
}
