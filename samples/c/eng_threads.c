/* A spinning worker thread beside a main thread that is stepped. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

volatile long spins;
volatile int started;

static void *worker(void *arg)
{
    (void)arg;
    started = 1;
    for (;;)
        spins++;
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (!started)
        ;
    int a = 1;
    int b = a + 1;
    int c = b + 1;
    usleep(20000), printf("%d\n", a + b + c);
    return 0;
}
