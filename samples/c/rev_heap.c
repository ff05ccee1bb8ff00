// rev_heap.c: a big heap rewritten a stripe at a time between system calls, for
// recording with snapshots (tests/reverse_memory.rs; the snapshot-memory figures of
// docs/benchmarks.md). Usage: rev_heap MIB ROUNDS [SLEEP_MS]: MIB MiB of heap, ROUNDS
// rounds each writing an eighth of it (the round's number in every byte) and making 64
// system calls, then a sleep of SLEEP_MS (the benchmark reads the snapshots' memory
// then). Prints the sum of the heap's first bytes of each stripe.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

unsigned char *heap;
size_t heap_len;
volatile int round_no;
volatile long calls;

__attribute__((noinline)) void rewrite(int round) {
    size_t stripe = heap_len / 8;
    size_t at = (size_t)(round % 8) * stripe;
    memset(heap + at, round & 0xff, stripe);
    round_no = round; // LINE_ROUND
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16;
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    long sleep_ms = argc > 3 ? atol(argv[3]) : 0;
    heap_len = mib << 20;
    heap = malloc(heap_len);
    if (!heap)
        return 2;
    memset(heap, 0xff, heap_len);
    for (int r = 1; r <= rounds; r++) {
        rewrite(r);
        for (int k = 0; k < 64; k++)
            calls += getppid() > 0;
    }
    if (sleep_ms > 0) {
        struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    unsigned long sum = 0;
    for (int s = 0; s < 8; s++)
        sum += heap[(size_t)s * (heap_len / 8)];
    printf("%lu %ld\n", sum, calls);
    return 0;
}
