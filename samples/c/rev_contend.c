/* rev_contend: 4 threads take one mutex 600 times each and make system calls while
 * holding it, so the recorder's switches at system-call exits land inside the critical
 * section and the others park on the mutex (issue 30: futex waits and wakes under one
 * thread at a time). Prints the deterministic total. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define NTHREADS 4
#define ROUNDS 600

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static long turns;

__attribute__((noinline)) void tally(long index, long value)
{
    total += value * (index + 1);
    turns++;
}

static void *worker(void *arg)
{
    long index = (long)arg;
    for (long round = 0; round < ROUNDS; round++) {
        pthread_mutex_lock(&lock);
        long v = (long)(getuid() % 5) + round % 3;
        tally(index, v);
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
    printf("total %ld turns %ld\n", total, turns);
    return turns == NTHREADS * ROUNDS ? 0 : 1;
}
