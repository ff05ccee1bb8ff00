/* P3 (tandem-bench): a loop of plain statements four frames deep, stepped over line by line. */
#include <stdlib.h>

volatile long sink;

static long mix(long a, long b)
{
    return (a * 31) ^ b;
}

static long inner(int rounds)
{
    long a = 1, b = 2, c = 3;
    for (int i = 0; i < rounds; i++) {
        a += i; /* BENCH_STEP_LINE */
        b ^= a;
        c = mix(a, b);
        sink = c;
    }
    return a + b + c;
}

static long middle(int rounds)
{
    return inner(rounds) + 1;
}

static long outer(int rounds)
{
    return middle(rounds) * 2;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100000;
    sink = outer(rounds);
    return 0;
}
