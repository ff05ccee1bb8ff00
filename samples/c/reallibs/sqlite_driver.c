/* A small SQLite workload (an in-memory database: inserts, an index, grouped queries)
 * for the real-library tests: the program scripts/real-libs builds as
 * `sqlite-O0`/`sqlite-O2` from the sqlite3.c that libsqlite3-sys bundles. */
#include <stdio.h>
#include <stdlib.h>

#include "sqlite3.h"

static int print_row(void *unused, int n, char **values, char **names)
{
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? " " : "", values[i] ? values[i] : "NULL");
    printf("\n");
    return 0;
}

static int run(sqlite3 *db, const char *sql)
{
    char *error = NULL;
    if (sqlite3_exec(db, sql, print_row, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, error);
        sqlite3_free(error);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : 2000;
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return 1;
    int failed = run(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER)");
    failed |= run(db, "BEGIN");
    for (int i = 0; i < rows && !failed; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO t(name, v) VALUES('n%d', %d)", i % 50,
                 (i * 37) % 1000);
        failed |= run(db, sql);
    }
    failed |= run(db, "COMMIT");
    failed |= run(db, "CREATE INDEX t_v ON t(v)");
    failed |= run(db, "SELECT name, count(*), sum(v) FROM t GROUP BY name ORDER BY name LIMIT 5");
    failed |= run(db, "SELECT count(*) FROM t WHERE v BETWEEN 100 AND 200");
    failed |= run(db, "DELETE FROM t WHERE v % 3 = 0");
    failed |= run(db, "SELECT count(*), max(v) FROM t");
    sqlite3_close(db);
    return failed;
}
