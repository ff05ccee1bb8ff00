/* P1 (tandem-bench): a function called N times; the conditional breakpoint sits on its body line. */
#include <stdlib.h>

volatile long sink;

void work(int i)
{
    sink += i; /* BENCH_COND_LINE */
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    for (int i = 0; i < n; i++) {
        work(i);
    }
    return 0;
}
