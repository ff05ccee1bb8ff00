/* proc_target: calls proc_bp_target(i) argv[1] times, prints, exits with argv[2]. */
#include <stdio.h>
#include <stdlib.h>

volatile long proc_counter;

__attribute__((noinline)) void proc_bp_target(long i) {
    proc_counter += i;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3;
    int code = argc > 2 ? atoi(argv[2]) : 7;
    for (long i = 0; i < n; i++)
        proc_bp_target(i);
    printf("done %ld\n", proc_counter);
    fflush(stdout);
    return code;
}
