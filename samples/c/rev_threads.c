/* rev_threads: 4 threads add their own work to a mutex-protected total, 5 rounds each
 * (issue 30: recording a multi-threaded program). The result printed is deterministic. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ROUNDS 5

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static long rounds_done;

__attribute__((noinline)) static long work(long index, long round)
{
    long v = 0;
    for (long k = 0; k <= 1000 * (index + 1); k++)
        v += (k * (round + 1)) % 7;
    return v + index * 100000;
}

static void *worker(void *arg)
{
    long index = (long)arg;
    for (long round = 0; round < ROUNDS; round++) {
        long v = work(index, round);
        pthread_mutex_lock(&lock);
        total += v; /* tally */
        rounds_done++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("total %ld rounds %ld\n", total, rounds_done);
    return rounds_done == NTHREADS * ROUNDS ? 0 : 1;
}
