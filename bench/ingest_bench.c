/* Push-API ingest benchmark: N client threads POST batches of 1,000 GPU
 * samples (8 GPUs x 125 sixty-second summaries, as an agent replaying its
 * spool sends them) to a running gpuinv, and report samples/s and batch
 * latency percentiles. The reference, measured in the same run, is a raw
 * bulk insert of the same rows into the same table layout: on SQLite one
 * prepared statement, one transaction per 1,000 rows, WAL,
 * synchronous=NORMAL; on PostgreSQL (REF is a connection string: the
 * server's own database) one multi-row INSERT of 1,000 rows per
 * transaction into the server's gpu_samples table itself, from as many
 * concurrent connections as there are clients, and a second reference:
 * the same rows with COPY ... FROM STDIN (text format), 1,000 rows per
 * transaction, under another source id.
 *
 * CPU time: with BENCH_SERVER_PID (the gpuinv process) and BENCH_PG_PID
 * (the postmaster: its own time and its children's, the backends) in the
 * environment, the CPU seconds each spent per 1,000 samples while the
 * clients ran are reported too, a figure that a busy machine disturbs far
 * less than the rates; likewise PostgreSQL's for each reference.
 *
 * Build and run: see bench/ingest.sh. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GPUS 8
#define PER_GPU 125

static const char *server, *token;
static int columnar = 1; /* the form the agent sends; 0: one object per sample */
static int batches_per_thread;
static long long base_ts;
static double *lat;
static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* CPU seconds (user + system) of process pid, with its children's: the
 * reaped ones (cutime, cstime) and, when `tree`, the live ones. 0 when
 * pid is 0 or unreadable. */
static double cpu_s(long pid, int tree)
{
    char path[64], buf[1024];
    double total = 0;
    long tick = sysconf(_SC_CLK_TCK);
    FILE *f;

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        char *p;
        buf[n] = '\0';
        fclose(f);
        /* Fields after the command's closing parenthesis: state (3), ppid
         * (4), ..., utime (14), stime (15), cutime (16), cstime (17). */
        if ((p = strrchr(buf, ')')) != NULL) {
            unsigned long long v[4] = {0};
            int field = 2;
            for (char *t = p + 1; *t && field < 17; t++) {
                if (*t != ' ')
                    continue;
                field++;
                if (field >= 14 && field <= 17)
                    v[field - 14] = strtoull(t + 1, NULL, 10);
            }
            total = (double)(v[0] + v[1] + v[2] + v[3]) / (double)tick;
        }
    }
    if (tree) {
        /* Live children: every process whose parent is pid. */
        FILE *ls = popen("ls /proc", "r");
        char name[64];
        while (ls && fgets(name, sizeof name, ls)) {
            long child = strtol(name, NULL, 10);
            char *p;
            if (child <= 0)
                continue;
            snprintf(path, sizeof path, "/proc/%ld/stat", child);
            if ((f = fopen(path, "r")) == NULL)
                continue;
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = '\0';
            fclose(f);
            if ((p = strrchr(buf, ')')) != NULL && strtol(p + 3, NULL, 10) == pid)
                total += cpu_s(child, 0);
        }
        if (ls)
            pclose(ls);
    }
    return total;
}

/* The first three figures of /proc/loadavg. */
static void loadavg(char *out, size_t len)
{
    FILE *f = fopen("/proc/loadavg", "r");
    float a = 0, b = 0, c = 0;

    if (f) {
        if (fscanf(f, "%f %f %f", &a, &b, &c) != 3)
            a = b = c = 0;
        fclose(f);
    }
    snprintf(out, len, "%.2f %.2f %.2f", a, b, c);
}

static long env_pid(const char *name)
{
    const char *v = getenv(name);
    return v ? strtol(v, NULL, 10) : 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Builds the JSON body of batch b from host h (caller frees). */
static char *make_batch(int h, int b, size_t *len)
{
    size_t cap = 256 * 1024, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n,
                          "{\"batch_id\":\"bench-%d-%d\",\"host\":{\"hostname\":\"bench-host-%04d\"},"
                          "\"gpus\":[",
                          h, b, h);
    for (int g = 0; g < GPUS; g++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"uuid\":\"GPU-bench%04d-%04d-0000-0000-000000000000\",\"index\":%d,"
                              "\"name\":\"NVIDIA H100 80GB HBM3\",\"serial\":\"S%04d%04d\","
                              "\"pci_bus_id\":\"0000:%02x:00.0\",\"memory_total_mib\":81559}",
                              g ? "," : "", h, g, g, h, g, 0x18 + g);
    if (columnar) {
        n += (size_t)snprintf(s + n, cap - n,
                              "],\"samples\":{\"columns\":[\"time\",\"gpu\",\"util_avg\","
                              "\"util_max\",\"mem_used_mib\",\"power_avg_w\",\"energy_j\","
                              "\"temp_c\"],\"rows\":[");
        for (int k = 0; k < PER_GPU; k++)
            for (int g = 0; g < GPUS; g++)
                n += (size_t)snprintf(s + n, cap - n, "%s[%lld,%d,%d.5,%d,%d,%d.25,%d,%d]",
                                      k || g ? "," : "", base_ts + (long long)b * PER_GPU + k, g,
                                      (k * 7 + g) % 100, (k * 7 + g) % 100, 1000 + k * 10,
                                      200 + g, 12000 + k, 40 + g);
        n += (size_t)snprintf(s + n, cap - n, "]}}");
        *len = n;
        return s;
    }
    n += (size_t)snprintf(s + n, cap - n, "],\"samples\":[");
    for (int k = 0; k < PER_GPU; k++)
        for (int g = 0; g < GPUS; g++)
            n += (size_t)snprintf(s + n, cap - n,
                                  "%s{\"time\":%lld,\"gpu\":\"GPU-bench%04d-%04d-0000-0000-000000000000\","
                                  "\"util_avg\":%d.5,\"util_max\":%d,\"mem_used_mib\":%d,"
                                  "\"power_avg_w\":%d.25,\"energy_j\":%d,\"temp_c\":%d}",
                                  k || g ? "," : "", base_ts + (long long)b * PER_GPU + k, h, g,
                                  (k * 7 + g) % 100, (k * 7 + g) % 100, 1000 + k * 10, 200 + g,
                                  12000 + k, 40 + g);
    n += (size_t)snprintf(s + n, cap - n, "]}");
    *len = n;
    return s;
}

static size_t discard(char *p, size_t a, size_t b, void *c)
{
    (void)p;
    (void)c;
    return a * b;
}

struct worker {
    int id;
    char **bodies;
    size_t *lens;
};

static void *client(void *arg)
{
    struct worker *w = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[512], auth[512];

    snprintf(url, sizeof url, "%s/api/v1/ingest", server);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, auth);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    for (int b = 0; b < batches_per_thread; b++) {
        long code = 0;
        double t0 = now_s();
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, w->bodies[b]);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)w->lens[b]);
        if (curl_easy_perform(c) != CURLE_OK ||
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 201) {
            pthread_mutex_lock(&mu);
            failures++;
            pthread_mutex_unlock(&mu);
        }
        lat[w->id * batches_per_thread + b] = now_s() - t0;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The reference: the same rows (same hosts, GPUs and times, batches
 * interleaved across clients as the server sees them) straight into SQLite. */
static double raw_sqlite(const char *path, int threads, int per_thread)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    double t0;

    unlink(path);
    sqlite3_open(path, &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE gpu_samples (ts BIGINT NOT NULL, gpu_id BIGINT NOT NULL,"
                     " util_avg DOUBLE PRECISION, util_max DOUBLE PRECISION, mem_used_mib DOUBLE"
                     " PRECISION, power_avg_w DOUBLE PRECISION, energy_j DOUBLE PRECISION, temp_c"
                     " DOUBLE PRECISION, ecc_corrected BIGINT, ecc_uncorrected BIGINT, xid BIGINT,"
                     " source_id BIGINT NOT NULL, PRIMARY KEY (ts, gpu_id, source_id))",
                 NULL, NULL, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib,"
                       " power_avg_w, energy_j, temp_c, source_id) VALUES (?,?,?,?,?,?,?,?,1)",
                       -1, &st, NULL);
    t0 = now_s();
    for (int i = 0; i < threads * per_thread; i++) {
        int h = i % threads, b = i / threads;
        sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
        for (int k = 0; k < PER_GPU; k++)
            for (int g = 0; g < GPUS; g++) {
                /* The server keys samples by an integer GPU id; so does this. */
                sqlite3_bind_int64(st, 1, base_ts + (long long)b * PER_GPU + k);
                sqlite3_bind_int64(st, 2, h * GPUS + g + 1);
                sqlite3_bind_double(st, 3, (k * 7 + g) % 100 + 0.5);
                sqlite3_bind_double(st, 4, (k * 7 + g) % 100);
                sqlite3_bind_double(st, 5, 1000 + k * 10);
                sqlite3_bind_double(st, 6, 200 + g + 0.25);
                sqlite3_bind_double(st, 7, 12000 + k);
                sqlite3_bind_double(st, 8, 40 + g);
                sqlite3_step(st);
                sqlite3_reset(st);
            }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    double el = now_s() - t0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return (double)threads * per_thread * GPUS * PER_GPU / el;
}

/* The PostgreSQL reference: each thread inserts its host's batches as
 * multi-row INSERTs under a source id no server row has. */
static const char *ref_conninfo;
static int ref_failures;

static void *raw_pg_thread(void *arg)
{
    int h = (int)(long)arg;
    PGconn *pg = PQconnectdb(ref_conninfo);
    size_t cap = 256 * 1024;
    char *sql = malloc(cap);

    for (int b = 0; PQstatus(pg) == CONNECTION_OK && b < batches_per_thread; b++) {
        size_t n = (size_t)snprintf(sql, cap,
                                    "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, "
                                    "mem_used_mib, power_avg_w, energy_j, temp_c, source_id) VALUES ");
        for (int k = 0; k < PER_GPU; k++)
            for (int g = 0; g < GPUS; g++)
                n += (size_t)snprintf(sql + n, cap - n, "%s(%lld,%d,%d.5,%d,%d,%d.25,%d,%d,%lld)",
                                      k || g ? "," : "", base_ts + (long long)b * PER_GPU + k,
                                      h * GPUS + g + 1, (k * 7 + g) % 100, (k * 7 + g) % 100,
                                      1000 + k * 10, 200 + g, 12000 + k, 40 + g,
                                      (1LL << 40) + h);
        PGresult *r = PQexec(pg, "BEGIN");
        PQclear(r);
        r = PQexec(pg, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "reference insert: %s", PQerrorMessage(pg));
            pthread_mutex_lock(&mu);
            ref_failures++;
            pthread_mutex_unlock(&mu);
        }
        PQclear(r);
        r = PQexec(pg, "COMMIT");
        PQclear(r);
    }
    if (PQstatus(pg) != CONNECTION_OK)
        fprintf(stderr, "reference: %s", PQerrorMessage(pg));
    free(sql);
    PQfinish(pg);
    return NULL;
}

/* The COPY reference: each thread copies its host's batches, one COPY
 * of 1,000 rows per transaction. */
static void *raw_pg_copy_thread(void *arg)
{
    int h = (int)(long)arg;
    PGconn *pg = PQconnectdb(ref_conninfo);
    size_t cap = 256 * 1024;
    char *rows = malloc(cap);

    for (int b = 0; PQstatus(pg) == CONNECTION_OK && b < batches_per_thread; b++) {
        size_t n = 0;
        int ok = 1;
        for (int k = 0; k < PER_GPU; k++)
            for (int g = 0; g < GPUS; g++)
                n += (size_t)snprintf(rows + n, cap - n, "%lld\t%d\t%d.5\t%d\t%d\t%d.25\t%d\t%d\t%lld\n",
                                      base_ts + (long long)b * PER_GPU + k, h * GPUS + g + 1,
                                      (k * 7 + g) % 100, (k * 7 + g) % 100, 1000 + k * 10, 200 + g,
                                      12000 + k, 40 + g, (1LL << 41) + h);
        PGresult *r = PQexec(pg, "BEGIN");
        PQclear(r);
        r = PQexec(pg, "COPY gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "
                       "power_avg_w, energy_j, temp_c, source_id) FROM STDIN");
        ok = PQresultStatus(r) == PGRES_COPY_IN;
        PQclear(r);
        if (ok)
            ok = PQputCopyData(pg, rows, (int)n) == 1 && PQputCopyEnd(pg, NULL) == 1;
        while ((r = PQgetResult(pg)) != NULL) {
            ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
            PQclear(r);
        }
        if (!ok) {
            fprintf(stderr, "reference copy: %s", PQerrorMessage(pg));
            pthread_mutex_lock(&mu);
            ref_failures++;
            pthread_mutex_unlock(&mu);
        }
        r = PQexec(pg, "COMMIT");
        PQclear(r);
    }
    if (PQstatus(pg) != CONNECTION_OK)
        fprintf(stderr, "reference: %s", PQerrorMessage(pg));
    free(rows);
    PQfinish(pg);
    return NULL;
}

/* Rows per second of one PostgreSQL reference (copy: COPY, else INSERT)
 * from `threads` connections. */
static double raw_pg(const char *conninfo, int threads, int copy)
{
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    double t0, el;

    ref_conninfo = conninfo;
    t0 = now_s();
    for (int h = 0; h < threads; h++)
        pthread_create(&t[h], NULL, copy ? raw_pg_copy_thread : raw_pg_thread, (void *)(long)h);
    for (int h = 0; h < threads; h++)
        pthread_join(t[h], NULL);
    el = now_s() - t0;
    free(t);
    return ref_failures ? 0 : (double)threads * batches_per_thread * GPUS * PER_GPU / el;
}

int main(int argc, char **argv)
{
    int threads, total;
    pthread_t *tid;
    struct worker *w;
    double t0, el, rate, ref, copy_ref = 0;
    double srv0, pg0, srv_cpu, pg_cpu, ref_pg_cpu = 0, copy_pg_cpu = 0;
    long srv_pid = env_pid("BENCH_SERVER_PID"), pg_pid = env_pid("BENCH_PG_PID");
    char load0[64] = "", load1[64] = "";
    int pg_ref;

    if (argc != 6 && argc != 7) {
        fprintf(stderr,
                "usage: ingest_bench URL TOKEN THREADS BATCHES_PER_THREAD REF_DB [columns|objects]\n");
        return 2;
    }
    if (argc == 7)
        columnar = strcmp(argv[6], "objects") != 0;
    server = argv[1];
    token = argv[2];
    threads = (int)strtol(argv[3], NULL, 10);
    batches_per_thread = (int)strtol(argv[4], NULL, 10);
    total = threads * batches_per_thread;
    base_ts = (long long)time(NULL) - (long long)batches_per_thread * PER_GPU - 3600;
    lat = calloc((size_t)total, sizeof *lat);
    tid = calloc((size_t)threads, sizeof *tid);
    w = calloc((size_t)threads, sizeof *w);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int t = 0; t < threads; t++) {
        w[t].id = t;
        w[t].bodies = calloc((size_t)batches_per_thread, sizeof(char *));
        w[t].lens = calloc((size_t)batches_per_thread, sizeof(size_t));
        for (int b = 0; b < batches_per_thread; b++)
            w[t].bodies[b] = make_batch(t, b, &w[t].lens[b]);
    }
    loadavg(load0, sizeof load0);
    srv0 = cpu_s(srv_pid, 0);
    pg0 = cpu_s(pg_pid, 1);
    t0 = now_s();
    for (int t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, client, &w[t]);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    el = now_s() - t0;
    srv_cpu = cpu_s(srv_pid, 0) - srv0;
    pg_cpu = cpu_s(pg_pid, 1) - pg0;
    loadavg(load1, sizeof load1);
    rate = (double)total * GPUS * PER_GPU / el;
    qsort(lat, (size_t)total, sizeof *lat, cmp);
    pg_ref = strncmp(argv[5], "postgres", 8) == 0 || strchr(argv[5], '=') != NULL;
    pg0 = cpu_s(pg_pid, 1);
    ref = pg_ref ? raw_pg(argv[5], threads, 0) : raw_sqlite(argv[5], threads, batches_per_thread);
    ref_pg_cpu = cpu_s(pg_pid, 1) - pg0;
    if (pg_ref) {
        pg0 = cpu_s(pg_pid, 1);
        copy_ref = raw_pg(argv[5], threads, 1);
        copy_pg_cpu = cpu_s(pg_pid, 1) - pg0;
    }
    printf("{\"store\":\"%s\",\"format\":\"%s\",\"batches\":%d,\"samples_per_batch\":%d,"
           "\"threads\":%d,\"failures\":%d,"
           "\"samples_per_s\":%.0f,\"batch_p50_ms\":%.1f,\"batch_p99_ms\":%.1f,"
           "\"batch_max_ms\":%.1f,\"raw_rows_per_s\":%.0f,\"ratio\":%.2f",
           pg_ref ? "postgresql" : "sqlite", columnar ? "columns" : "objects", total, GPUS * PER_GPU, threads, failures, rate, lat[total / 2] * 1e3,
           lat[(int)(total * 0.99)] * 1e3, lat[total - 1] * 1e3, ref, rate / ref);
    if (pg_ref)
        printf(",\"copy_rows_per_s\":%.0f,\"copy_ratio\":%.2f", copy_ref,
               copy_ref > 0 ? rate / copy_ref : 0.0);
    if (srv_pid > 0)
        printf(",\"server_cpu_s_per_1k\":%.4f", srv_cpu / total);
    if (pg_pid > 0)
        printf(",\"pg_cpu_s_per_1k\":%.4f,\"ref_pg_cpu_s_per_1k\":%.4f,"
               "\"copy_pg_cpu_s_per_1k\":%.4f",
               pg_cpu / total, ref_pg_cpu / total, copy_pg_cpu / total);
    printf(",\"loadavg_start\":\"%s\",\"loadavg_end\":\"%s\"}\n", load0, load1);
    return failures ? 1 : 0;
}
