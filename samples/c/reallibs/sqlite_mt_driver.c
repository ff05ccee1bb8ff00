/* SQLite with its threads on (SQLITE_THREADSAFE=1) for the differential torture harness
 * (tests/torture_real.rs): THREADS threads, each with its own connection to its own
 * in-memory database, run the same shape of workload on a number of rows of its own;
 * each writes its results to a buffer of its own, printed in thread order after all are
 * joined, so the output does not depend on how the threads interleave. Every insert
 * calls torture_mark(thread, row): the harness's sometimes-true condition counts its
 * hits against the "marks" line (rows with row % 50 == 0), which the program computes.
 *
 *   sqlite-mt-O2 [ROWS [THREADS]]   (defaults 400 and 3; at most 8 threads)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite3.h"

#define MAX_THREADS 8

struct job {
    int t;
    int rows;
    int failed;
    size_t len;
    char out[4096];
};

/* Called once per inserted row; a breakpoint's condition names its parameters. */
__attribute__((noinline)) int torture_mark(int thread, int row)
{
    __asm__ volatile("" ::: "memory");
    return thread * 100000 + row;
}

static int collect(void *arg, int n, char **values, char **names)
{
    struct job *j = arg;
    (void)names;
    for (int i = 0; i < n; i++) {
        int w = snprintf(j->out + j->len, sizeof j->out - j->len, "%s%s", i ? " " : "",
                         values[i] ? values[i] : "NULL");
        if (w > 0 && j->len + (size_t)w < sizeof j->out)
            j->len += (size_t)w;
    }
    if (j->len + 1 < sizeof j->out)
        j->out[j->len++] = '\n';
    return 0;
}

static void run(sqlite3 *db, struct job *j, const char *sql)
{
    char *error = NULL;
    if (!j->failed && sqlite3_exec(db, sql, collect, j, &error) != SQLITE_OK) {
        fprintf(stderr, "thread %d: %s: %s\n", j->t, sql, error);
        sqlite3_free(error);
        j->failed = 1;
    }
}

static void *work(void *arg)
{
    struct job *j = arg;
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        j->failed = 1;
        return NULL;
    }
    run(db, j, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER)");
    run(db, j, "BEGIN");
    for (int i = 0; i < j->rows; i++) {
        char sql[128];
        torture_mark(j->t, i);
        snprintf(sql, sizeof sql, "INSERT INTO t(name, v) VALUES('n%d', %d)", i % 40,
                 (i * 37 + j->t) % 1000);
        run(db, j, sql);
    }
    run(db, j, "COMMIT");
    run(db, j, "CREATE INDEX t_v ON t(v)");
    run(db, j, "SELECT name, count(*), sum(v) FROM t GROUP BY name ORDER BY name LIMIT 4");
    run(db, j, "SELECT count(*) FROM t WHERE v BETWEEN 100 AND 200");
    run(db, j, "DELETE FROM t WHERE v % 3 = 0");
    run(db, j, "SELECT count(*), max(v) FROM t");
    sqlite3_close(db);
    return NULL;
}

int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : 400;
    int threads = argc > 2 ? atoi(argv[2]) : 3;
    if (threads < 1 || threads > MAX_THREADS || rows < 1)
        return 2;
    if (!sqlite3_threadsafe()) {
        fprintf(stderr, "sqlite built without threads\n");
        return 2;
    }
    static struct job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    long marks = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t].t = t;
        jobs[t].rows = rows + 17 * t;
        for (int i = 0; i < jobs[t].rows; i++)
            marks += i % 50 == 0;
        pthread_create(&th[t], NULL, work, &jobs[t]);
    }
    int failed = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        printf("thread %d rows %d\n%.*s", t, jobs[t].rows, (int)jobs[t].len, jobs[t].out);
        failed |= jobs[t].failed;
    }
    printf("marks %ld\n", marks);
    return failed;
}
