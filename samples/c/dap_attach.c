// dap_attach.c: a long-running program the attach tests find by pid or by name; it
// sleeps between ticks so it costs no CPU while it waits.
#include <unistd.h>

volatile unsigned long ticks;

__attribute__((noinline)) void tick(int step) {
    ticks += step; // LINE_TICK
}

int main(void) {
    for (;;) {
        tick(1);
        usleep(1000);
    }
}
