/* A function called N times: the false-condition breakpoint benchmark's sample. */
#include <stdlib.h>

volatile long sink;

void work(int i)
{
    sink += i;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    for (int i = 0; i < n; i++) {
        work(i);
    }
    return 0;
}
