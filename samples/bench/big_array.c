/* P5 (tandem-bench): a local array of 1,000,000 ints, paged through `variables` start/count. */
#include <stdio.h>

#define N 1000000

volatile long sink;

static long fill_and_sum(void)
{
    int big[N];
    long sum = 0;
    for (int i = 0; i < N; i++) {
        big[i] = i;
    }
    for (int i = 0; i < N; i++) {
        sum += big[i]; /* BENCH_ARRAY_LINE */
    }
    return sum;
}

int main(void)
{
    sink = fill_and_sum();
    printf("%ld\n", (long)sink);
    return 0;
}
