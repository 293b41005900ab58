/* Counts the statements a server runs, by SQL text, for profiling the
 * ingest path: loaded into gpuinv with LD_PRELOAD, it counts every
 * sqlite3_step() (so a query counts once per row) and every libpq query
 * (prepared statements by the text they were prepared from) and writes the counts to the file named
 * by GI_STMT_COUNTS when the process exits: one line per text, the count, the thread CPU time spent
 * in the call in microseconds (for SQLite the statement's whole cost; for libpq only the client's
 * side), and the text's first 100 characters, separated by tabs. The waits for the server count
 * under texts of their own beginning "(round trip)": each call that waits for an answer
 * (PQexec, PQexecPrepared, PQprepare), each pipeline's sync and each copy's end. Build: cc
 * -shared -fPIC -O2 -o ingest_stmts.so bench/ingest_stmts.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#define SLOTS 4096

struct slot {
    char *text;
    long n;
    long long ns;
};

static struct slot counts[SLOTS];
static struct slot names[SLOTS]; /* libpq statement name -> its text (n unused) */
static char *name_keys[SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static long long cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void count_ns(const char *text, long long ns)
{
    if (text == NULL)
        text = "(null)";
    pthread_mutex_lock(&mu);
    for (unsigned i = hash(text) % SLOTS, k = 0; k < SLOTS; i = (i + 1) % SLOTS, k++) {
        if (counts[i].text == NULL)
            counts[i].text = strdup(text);
        if (strcmp(counts[i].text, text) == 0) {
            counts[i].n++;
            counts[i].ns += ns;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
}

static void count(const char *text) { count_ns(text, 0); }

static void name_set(const char *name, const char *text)
{
    pthread_mutex_lock(&mu);
    for (unsigned i = hash(name) % SLOTS, k = 0; k < SLOTS; i = (i + 1) % SLOTS, k++) {
        if (name_keys[i] == NULL || strcmp(name_keys[i], name) == 0) {
            if (name_keys[i] == NULL)
                name_keys[i] = strdup(name);
            free(names[i].text);
            names[i].text = strdup(text);
            break;
        }
    }
    pthread_mutex_unlock(&mu);
}

static const char *name_get(const char *name)
{
    const char *t = name;
    pthread_mutex_lock(&mu);
    for (unsigned i = hash(name) % SLOTS, k = 0; k < SLOTS && name_keys[i];
         i = (i + 1) % SLOTS, k++)
        if (strcmp(name_keys[i], name) == 0) {
            t = names[i].text;
            break;
        }
    pthread_mutex_unlock(&mu);
    return t;
}

__attribute__((destructor)) static void dump(void)
{
    const char *path = getenv("GI_STMT_COUNTS");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f == NULL)
        return;
    for (int i = 0; i < SLOTS; i++)
        if (counts[i].text)
            fprintf(f, "%ld\t%lld\t%.100s\n", counts[i].n, counts[i].ns / 1000, counts[i].text);
    fclose(f);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int sqlite3_step(sqlite3_stmt *s)
{
    static __typeof__(&sqlite3_step) next;
    if (!next)
        next = NEXT(sqlite3_step);
    long long t = cpu_ns();
    int rc = next(s);
    count_ns(sqlite3_sql(s), cpu_ns() - t);
    return rc;
}

PGresult *PQprepare(PGconn *c, const char *name, const char *q, int n, const Oid *types)
{
    static __typeof__(&PQprepare) next;
    if (!next)
        next = NEXT(PQprepare);
    char key[300];
    snprintf(key, sizeof key, "%p/%.200s", (void *)c, name);
    name_set(key, q);
    count("(round trip) PQprepare");
    return next(c, name, q, n, types);
}

int PQpipelineSync(PGconn *c)
{
    static __typeof__(&PQpipelineSync) next;
    if (!next)
        next = NEXT(PQpipelineSync);
    count("(round trip) PQpipelineSync");
    return next(c);
}

int PQputCopyEnd(PGconn *c, const char *msg)
{
    static __typeof__(&PQputCopyEnd) next;
    if (!next)
        next = NEXT(PQputCopyEnd);
    count("(round trip) PQputCopyEnd");
    return next(c, msg);
}

int PQsendQueryPrepared(PGconn *c, const char *name, int n, const char *const *v, const int *l,
                        const int *f, int rf)
{
    static __typeof__(&PQsendQueryPrepared) next;
    if (!next)
        next = NEXT(PQsendQueryPrepared);
    char key[300];
    snprintf(key, sizeof key, "%p/%.200s", (void *)c, name);
    count(name_get(key));
    return next(c, name, n, v, l, f, rf);
}

PGresult *PQexecPrepared(PGconn *c, const char *name, int n, const char *const *v, const int *l,
                         const int *f, int rf)
{
    static __typeof__(&PQexecPrepared) next;
    if (!next)
        next = NEXT(PQexecPrepared);
    char key[300];
    snprintf(key, sizeof key, "%p/%.200s", (void *)c, name);
    count(name_get(key));
    count("(round trip) PQexecPrepared");
    return next(c, name, n, v, l, f, rf);
}

int PQsendQueryParams(PGconn *c, const char *q, int n, const Oid *t, const char *const *v,
                      const int *l, const int *f, int rf)
{
    static __typeof__(&PQsendQueryParams) next;
    if (!next)
        next = NEXT(PQsendQueryParams);
    count(q);
    return next(c, q, n, t, v, l, f, rf);
}

PGresult *PQexec(PGconn *c, const char *q)
{
    static __typeof__(&PQexec) next;
    if (!next)
        next = NEXT(PQexec);
    count(q);
    count("(round trip) PQexec");
    return next(c, q);
}
