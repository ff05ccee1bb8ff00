/* A hot function gcc -O2 splits into work and work.cold (the unlikely branch jumps back
 * into the body), with a switch compiled to a jump table; main calls it N times. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;
/* Never set: conditions `g_never == 1` never hold. */
int g_never;

__attribute__((noinline, cold)) void report(int i)
{
    fprintf(stderr, "rare %d\n", i);
}

__attribute__((noinline)) int work(int i)
{
    int r = i * 3;
    if (__builtin_expect(i % 97 == 0, 0)) {
        report(i);
        r += 7;
    }
    r ^= i >> 2;
    sink = r;
    switch (i % 9) {
    case 0: r += 11; break;
    case 1: r *= 3; break;
    case 2: r -= sink; break;
    case 3: r ^= 0x55; break;
    case 4: r += i; break;
    case 5: r = r * 5 + 1; break;
    case 6: r >>= 1; break;
    case 7: r |= 16; break;
    default: r = -r; break;
    }
    sink = r;
    return r;
}

int main(int argc, char **argv)
{
    long sum = 0;
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    for (int i = 0; i < n; i++)
        sum += work(i); /* LINE_LOOP */
    printf("sum %ld\n", sum);
    return 0;
}
