/* Post-mortem sample (tests/postmortem.rs): two workers wait in pause(), the main thread
 * recurses (not a tail call, so the frames stay at -O2) and, with the argument `crash`,
 * writes through a null pointer at the bottom; without it `bottom` returns (a breakpoint
 * there is where gdb's gcore writes the core). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct point {
    int x;
    int y;
};

int global_counter = 7;
static pthread_barrier_t ready;
volatile int sink;

__attribute__((noinline)) void worker_wait(int id) {
    volatile int mine = id * 10;
    pthread_barrier_wait(&ready);
    for (;;)
        pause(); /* worker waits */
    sink = mine;
}

static void *worker(void *arg) {
    worker_wait((int)(long)arg);
    return NULL;
}

__attribute__((noinline)) int bottom(struct point *p, int mode, double scale) {
    global_counter += p->x;
    if (mode)
        *(volatile int *)(long)sink = p->y; /* crash here */
    return p->x + p->y + (int)(scale * p->x);
}

__attribute__((noinline)) int recurse(int n, struct point *p, int mode) {
    if (n == 0) {
        int b = bottom(p, mode, n + 2.5); /* not a tail call: the frame stays */
        sink = b;
        return b;
    }
    int below = recurse(n - 1, p, mode);
    sink = below;
    return below * 2 + n;
}

int main(int argc, char **argv) {
    struct point pt = {3, 4};
    int mode = argc > 1 && strcmp(argv[1], "crash") == 0;
    pthread_t t[2];
    pthread_barrier_init(&ready, NULL, 3);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    pthread_barrier_wait(&ready);
    usleep(100000); /* the workers reach pause() */
    int r = recurse(4, &pt, mode);
    printf("%d\n", r);
    return 0;
}
