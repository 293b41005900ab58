/* The newest values of a push batch's GPUs on PostgreSQL, each way the
 * driver could send them, timed in the server: the PostgreSQL backend's
 * CPU per batch of GPUS updates, over ROUNDS batches of GPUs picked at
 * random from the gpus table of a gpuinv database (bench/ingest_latest.sh
 * makes one). Each batch is one transaction in one pipeline (BEGIN, the
 * statements, COMMIT, one sync), as the ingest transaction sends them:
 *
 *   each      one prepared UPDATE per GPU (by primary key)
 *   unnamed   one UPDATE ... FROM unnest of array parameters, sent unnamed
 *             (parsed and planned for its values at every execution)
 *   custom    the same prepared once, executed between SET plan_cache_mode
 *             = force_custom_plan and RESET plan_cache_mode (planned every
 *             time, parsed once)
 *   generic   the same prepared once while gpus held GPUS rows (and run
 *             ten times on them, so that the plan cache settles on a
 *             generic plan), then executed as PostgreSQL's plan cache
 *             chooses (plan_cache_mode = auto) after the table grew to
 *             ROWS rows and was analyzed
 *
 * and, on stderr, the plans PostgreSQL used (EXPLAIN). The
 * statements' text is that of src/store/ingest_rows.c (LATEST_SQL), with
 * the parameters numbered as the driver numbers them.
 *
 * Usage: ingest_latest CONNINFO GPUS ROUNDS ROWS, on a database whose gpus
 * table is empty; prints one JSON line per form.
 * Build: see bench/ingest_latest.sh. */
#define _GNU_SOURCE
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SET_PART                                                                                   \
    "UPDATE gpus SET sample_at = %s2, util_pct = %s7, mem_used_mib = %s8, power_w = %s9, temp_c "  \
    "= %s10, ecc_corrected = COALESCE(%s4, gpus.ecc_corrected), ecc_uncorrected = COALESCE(%s5, "  \
    "gpus.ecc_uncorrected), xid_last = COALESCE(%s6, gpus.xid_last), reading_source_id = $11, "    \
    "observed_at = CASE WHEN gpus.observed_at IS NULL OR gpus.observed_at < %s3 THEN %s3 ELSE "    \
    "gpus.observed_at END"
#define WHERE_PART                                                                                 \
    " WHERE gpus.id = %s1 AND CASE WHEN gpus.source_id = $11 THEN (gpus.reading_source_id IS "     \
    "NULL OR gpus.reading_source_id <> $11 OR gpus.sample_at IS NULL OR gpus.sample_at <= %s2) "   \
    "ELSE ((gpus.reading_source_id IS NULL OR gpus.reading_source_id <> gpus.source_id) AND "      \
    "(gpus.sample_at IS NULL OR gpus.sample_at <= %s2)) END"
#define FROM_PART                                                                                  \
    " FROM unnest(CAST($1 AS BIGINT[]), CAST($2 AS BIGINT[]), CAST($3 AS BIGINT[]), CAST($7 AS "   \
    "FLOAT8[]), CAST($8 AS FLOAT8[]), CAST($9 AS FLOAT8[]), CAST($10 AS FLOAT8[]), CAST($4 AS "    \
    "BIGINT[]), CAST($5 AS BIGINT[]), CAST($6 AS BIGINT[])) AS u (gid, ts, obs, ua, mem, pw, "     \
    "temp, ecc_c, ecc_u, xid)"

static char sql_each[2048], sql_many[2048];
static int ngpus, rounds;
static long long max_id;

/* Replaces each "%s<n>" of tmpl by "$<n>" (one GPU's parameters) or by
 * the unnest column of parameter n. */
static void expand(char *out, size_t cap, const char *tmpl, int many)
{
    static const char *const col[] = {"",      "u.gid", "u.ts",  "u.obs", "u.ecc_c", "u.ecc_u",
                                      "u.xid", "u.ua",  "u.mem", "u.pw",  "u.temp"};
    size_t j = strlen(out);

    for (const char *p = tmpl; *p && j + 16 < cap;) {
        if (p[0] == '%' && p[1] == 's') {
            char *end;
            long n = strtol(p + 2, &end, 10);
            if (many)
                j += (size_t)snprintf(out + j, cap - j, "%s", col[n]);
            else
                j += (size_t)snprintf(out + j, cap - j, "$%ld", n);
            p = end;
        } else {
            out[j++] = *p++;
            out[j] = '\0';
        }
    }
}

static void build_sql(void)
{
    sql_each[0] = sql_many[0] = '\0';
    expand(sql_each, sizeof sql_each, SET_PART WHERE_PART, 0);
    expand(sql_many, sizeof sql_many, SET_PART, 1);
    strncat(sql_many, FROM_PART, sizeof sql_many - strlen(sql_many) - 1);
    expand(sql_many, sizeof sql_many, WHERE_PART, 1);
}

static double cpu_of(long pid)
{
    char path[64], buf[1024];
    unsigned long long ut = 0, st = 0;
    FILE *f;
    char *p;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if ((p = strrchr(buf, ')')) == NULL)
        return 0;
    /* After ")": state (3) ... utime (14), stime (15). */
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static PGresult *must(PGconn *pg, PGresult *r)
{
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_PIPELINE_SYNC) {
        fprintf(stderr, "ingest_latest: %s", PQresultErrorMessage(r));
        exit(1);
    }
    (void)pg;
    return r;
}

static void exec(PGconn *pg, const char *sql) { PQclear(must(pg, PQexec(pg, sql))); }

/* One batch's parameter values: per GPU (each) or as arrays (many). */
struct batch {
    char v[11][8192];
};

static void make_batch(struct batch *b, long long first, long long ts, int i, int many)
{
    char one[64];

    for (int k = 1; k <= 10; k++)
        b->v[k][0] = '\0';
    for (int g = many ? 0 : i; g < (many ? ngpus : i + 1); g++) {
        long long id = 1 + (first + g) % max_id;
        const char *sep = b->v[1][0] ? "," : (many ? "{" : "");
        for (int k = 1; k <= 10; k++) {
            switch (k) {
            case 1:
                snprintf(one, sizeof one, "%s%lld", sep, id);
                break;
            case 2:
            case 3:
                snprintf(one, sizeof one, "%s%lld", sep, ts);
                break;
            case 4:
            case 5:
            case 6:
                snprintf(one, sizeof one, "%s%d", sep, g);
                break;
            default:
                snprintf(one, sizeof one, "%s%d.5", sep, 40 + g);
                break;
            }
            strncat(b->v[k], one, sizeof b->v[k] - strlen(b->v[k]) - 1);
        }
    }
    if (many)
        for (int k = 1; k <= 10; k++)
            strncat(b->v[k], "}", sizeof b->v[k] - strlen(b->v[k]) - 1);
}

/* Sends one batch in one pipeline and reads every answer. */
static void run_batch(PGconn *pg, const char *form, long long first, long long ts)
{
    struct batch b;
    const char *vals[11];
    int many = strcmp(form, "each") != 0, n = many ? 1 : ngpus, sent = 0;

    PQenterPipelineMode(pg);
    PQsendQueryParams(pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    if (strcmp(form, "custom") == 0) {
        PQsendQueryParams(pg, "SET plan_cache_mode = force_custom_plan", 0, NULL, NULL, NULL, NULL,
                          0);
        sent++;
    }
    for (int i = 0; i < n; i++) {
        make_batch(&b, first, ts, i, many);
        for (int k = 0; k < 10; k++)
            vals[k] = b.v[k + 1];
        vals[10] = "1";
        if (strcmp(form, "unnamed") == 0)
            PQsendQueryParams(pg, sql_many, 11, NULL, vals, NULL, NULL, 0);
        else
            PQsendQueryPrepared(pg, many ? "many" : "each", 11, vals, NULL, NULL, 0);
    }
    if (strcmp(form, "custom") == 0) {
        PQsendQueryParams(pg, "RESET plan_cache_mode", 0, NULL, NULL, NULL, NULL, 0);
        sent++;
    }
    PQsendQueryParams(pg, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
    PQpipelineSync(pg);
    for (int q = 0; q < n + 2 + sent; q++) {
        PGresult *r;
        while ((r = PQgetResult(pg)) != NULL)
            PQclear(must(pg, r));
    }
    PQclear(must(pg, PQgetResult(pg))); /* the sync */
    PQexitPipelineMode(pg);
}

static void explain(PGconn *pg, const char *form, long long first)
{
    struct batch b;
    char sql[8192 * 11 + 256];
    PGresult *r;

    make_batch(&b, first, 1, 0, 1);
    if (strcmp(form, "generic") == 0)
        snprintf(sql, sizeof sql,
                 "EXPLAIN (COSTS OFF) EXECUTE many('%s', '%s', '%s', '%s', '%s', '%s', '%s', "
                 "'%s', '%s', '%s', 1)",
                 b.v[1], b.v[2], b.v[3], b.v[4], b.v[5], b.v[6], b.v[7], b.v[8], b.v[9], b.v[10]);
    else
        snprintf(sql, sizeof sql, "PREPARE probe AS %s", sql_many);
    if (strcmp(form, "generic") != 0) {
        exec(pg, sql);
        snprintf(sql, sizeof sql,
                 "EXPLAIN (COSTS OFF) EXECUTE probe('%s', '%s', '%s', '%s', '%s', '%s', '%s', "
                 "'%s', '%s', '%s', 1)",
                 b.v[1], b.v[2], b.v[3], b.v[4], b.v[5], b.v[6], b.v[7], b.v[8], b.v[9], b.v[10]);
    }
    r = must(pg, PQexec(pg, sql));
    fprintf(stderr, "plan (%s):\n", form);
    for (int i = 0; i < PQntuples(r); i++)
        fprintf(stderr, "  %s\n", PQgetvalue(r, i, 0));
    PQclear(r);
    if (strcmp(form, "generic") != 0)
        exec(pg, "DEALLOCATE probe");
}

int main(int argc, char **argv)
{
    static const char *const forms[] = {"each", "unnamed", "custom", "generic"};
    PGconn *pg;
    PGresult *r;
    long pid;
    long long ts = 2000000000;

    char grow[256];

    if (argc != 5) {
        fprintf(stderr, "usage: ingest_latest CONNINFO GPUS ROUNDS ROWS\n");
        return 2;
    }
    ngpus = atoi(argv[2]);
    rounds = atoi(argv[3]);
    build_sql();
    pg = PQconnectdb(argv[1]);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "ingest_latest: %s", PQerrorMessage(pg));
        return 1;
    }
    snprintf(grow, sizeof grow,
             "INSERT INTO gpus (uuid, first_seen_at, last_seen_at, source_id) SELECT 'GPU-bench-' "
             "|| i, 0, 0, NULL FROM generate_series((SELECT COUNT(*) FROM gpus) + 1, %s) AS i",
             argv[2]);
    exec(pg, grow);
    r = must(pg, PQexec(pg, "SELECT pg_backend_pid(), (SELECT max(id) FROM gpus)"));
    pid = atol(PQgetvalue(r, 0, 0));
    max_id = atoll(PQgetvalue(r, 0, 1));
    PQclear(r);
    PQclear(must(pg, PQprepare(pg, "each", sql_each, 11, NULL)));
    PQclear(must(pg, PQprepare(pg, "many", sql_many, 11, NULL)));
    srand(7);
    /* The plan cache's choice while the table is small. */
    for (int i = 0; i < 10; i++)
        run_batch(pg, "generic", 0, ts++);
    explain(pg, "generic", 0);
    snprintf(grow, sizeof grow,
             "INSERT INTO gpus (uuid, first_seen_at, last_seen_at) SELECT 'GPU-bench-' || i, 0, 0 "
             "FROM generate_series(%d, %s) AS i",
             ngpus + 1, argv[4]);
    exec(pg, grow);
    exec(pg, "ANALYZE gpus");
    r = must(pg, PQexec(pg, "SELECT max(id) FROM gpus"));
    max_id = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    for (int f = 0; f < 4; f++) {
        double c0, w0, c1, w1;
        if (strcmp(forms[f], "generic") == 0)
            explain(pg, "generic", rand() % max_id);
        c0 = cpu_of(pid);
        w0 = now_s();
        for (int i = 0; i < rounds; i++)
            run_batch(pg, forms[f], rand() % max_id, ts++);
        c1 = cpu_of(pid);
        w1 = now_s();
        printf("{\"form\":\"%s\",\"gpus\":%d,\"rounds\":%d,\"table_rows\":%lld,"
               "\"backend_cpu_us_per_batch\":%.0f,\"wall_us_per_batch\":%.0f}\n",
               forms[f], ngpus, rounds, max_id, (c1 - c0) * 1e6 / rounds, (w1 - w0) * 1e6 / rounds);
        fflush(stdout);
        if (strcmp(forms[f], "unnamed") == 0)
            explain(pg, "unnamed", rand() % max_id);
    }
    PQfinish(pg);
    return 0;
}
