/* rev_spin: the main thread waits for a worker by spinning on a flag without a system
 * call, so the recorder must preempt it (issue 30: a thread that never enters the
 * kernel). The worker makes system calls; the result printed is deterministic. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int ready;
static volatile long produced;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++)
        produced += getuid() % 7 + i;
    ready = 1;
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (!ready)
        ;
    (void)getuid(); /* a call */
    long seen = produced; /* after the spin */
    pthread_join(t, NULL);
    printf("%ld\n", seen); /* print */
    return 0;
}
