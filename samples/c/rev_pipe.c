/* rev_pipe: the main thread reads a pipe a worker writes (issue 30: a blocking call
 * that only another thread of the program can end). Prints what it read. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int fds[2];

/* What the main thread read (a breakpoint's place after the read returned). */
__attribute__((noinline)) int got(const char *b)
{
    return b[0] == 'h' && b[1] == 'i';
}

static void *worker(void *arg)
{
    (void)arg;
    if (write(fds[1], "hi", 2) != 2)
        return (void *)1;
    return NULL;
}

int main(void)
{
    char b[3] = {0};
    pthread_t t;
    if (pipe(fds) != 0)
        return 2;
    pthread_create(&t, NULL, worker, NULL);
    if (read(fds[0], b, 2) != 2 || !got(b))
        return 3;
    pthread_join(t, NULL);
    printf("%s\n", b);
    return 0;
}
