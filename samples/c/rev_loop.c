/* A loop that makes no system call between its hits (tests/reverse_loops.rs): going
 * back by line inside it stays in the interval between two system calls, the one the
 * live program is in. */
#include <stdio.h>

static long g_sum;

__attribute__((noinline)) static long mix(long v, int i)
{
    long m = v * 31 + i;
    return m % 1000003;
}

int main(void)
{
    long acc = 7;
    puts("start");
    for (int i = 0; i < 50; i++) {
        acc = mix(acc, i);
        g_sum += acc % 17;
        acc += i; /* loop line */
    }
    printf("%ld %ld\n", acc, g_sum);
    return 0;
}
