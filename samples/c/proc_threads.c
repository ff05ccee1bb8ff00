/* proc_threads: 8 threads each call proc_thread_hit(index) argv[1] (1000) times. */
#include <pthread.h>
#include <stdlib.h>

#define NTHREADS 8
static long iterations = 1000;
volatile long proc_hits[NTHREADS];

__attribute__((noinline)) void proc_thread_hit(long index) {
    proc_hits[index]++;
}

static void *worker(void *arg) {
    long index = (long)arg;
    for (long i = 0; i < iterations; i++)
        proc_thread_hit(index);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t[NTHREADS];
    if (argc > 1)
        iterations = atol(argv[1]);
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        if (proc_hits[i] != iterations)
            return 1;
    return 0;
}
