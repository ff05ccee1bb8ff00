// dap_main.c: the program the DAP end-to-end suites debug. Lines that tests stop at carry
// a LINE_* marker; the tests find them by marker, never by number.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct inner {
    int v;
    char tag[8];
};

struct outer {
    int id;
    struct inner in;
    double ratio;
    struct inner *next;
};

int counter = 0;
static int numbers[64];
static volatile int worker_done;

int depth(int n) {
    if (n == 0) {
        return counter; // LINE_BOTTOM
    }
    counter++;
    return depth(n - 1) + 1; // LINE_RECURSE
}

int add(int a, int b) {
    int sum = a + b; // LINE_ADD
    return sum;
}

static void *worker(void *arg) {
    int *slot = arg;
    *slot = add(40, 2); // LINE_WORKER
    worker_done = 1;
    return NULL;
}

int main(int argc, char **argv) {
    struct outer o = {7, {3, "abc"}, 0.5, 0};
    struct inner extra = {9, "xyz"};
    o.next = &extra;
    for (int i = 0; i < 64; i++)
        numbers[i] = i * i;
    int x = 1;
    {
        int x = 2;
        x += add(x, 3); // LINE_SHADOW
        counter += x;
    }
    int r = depth(20); // LINE_CALL_DEPTH
    for (int i = 0; i < 5; i++) {
        counter += add(i, x); // LINE_LOOP
    }
    int slot = 0;
    pthread_t t;
    pthread_create(&t, NULL, worker, &slot);
    pthread_join(t, NULL);
    printf("args=%d", argc - 1);
    for (int i = 1; i < argc; i++)
        printf(" [%s]", argv[i]);
    printf("\n");
    const char *e = getenv("TANDEM_TEST_VAR");
    printf("env=%s\n", e ? e : "(unset)");
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd))
        printf("cwd=%s\n", cwd);
    fprintf(stderr, "to stderr %d\n", o.id + extra.v + slot);
    fflush(stdout);
    return r >= 20 ? 3 : 1; // LINE_RETURN
}
