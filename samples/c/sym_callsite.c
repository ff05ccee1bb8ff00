/* Call-site parameters at -O2: `leaf`'s arguments are dead after their last use, so
 * gdb (and tandem) recover them through DW_OP_entry_value and the caller's
 * DW_TAG_call_site / DW_TAG_GNU_call_site. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int leaf(int a, int b)
{
    sink = a * 3;
    sink = b;
    asm volatile("" ::: "memory", "rdi", "rsi");
    return 7;
}

__attribute__((noinline)) int middle(int n)
{
    int k = n + 40;
    int r = leaf(k, 5);
    return r + k;
}

int main(int argc, char **argv)
{
    (void)argv;
    int total = middle(argc + 1);
    printf("%d\n", total);
    return total == 49 ? 0 : 1;
}
