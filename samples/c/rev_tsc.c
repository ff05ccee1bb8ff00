/* Going back in time (crates/tracer/tests/record.rs): rdtsc and rdtscp, whose values a
 * replay must give again as they were. */
#include <stdio.h>
#include <x86intrin.h>

unsigned long long g_tsc[4];

__attribute__((noinline)) void tsc_note(int k, unsigned long long v)
{
    g_tsc[k] = v;
}

int main(void)
{
    unsigned aux;
    for (int k = 0; k < 4; k++) {
        unsigned long long v = (k & 1) ? __rdtscp(&aux) : __rdtsc();
        tsc_note(k, v);
    }
    printf("%llu %llu %llu %llu\n", g_tsc[0], g_tsc[1], g_tsc[2], g_tsc[3]);
    return g_tsc[3] > g_tsc[0] ? 0 : 1;
}
