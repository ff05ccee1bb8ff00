/* proc_spin: a busy loop that never ends; proc_spin_work is called every round. */
#include <unistd.h>

volatile unsigned long proc_spin_counter;

__attribute__((noinline)) void proc_spin_work(void) {
    proc_spin_counter++;
}

int main(void) {
    for (;;) {
        for (int i = 0; i < 1000; i++)
            proc_spin_work();
    }
}
