/* Calls for "step into the call you choose" (DAP stepInTargets, stepIn with a
   targetId): nested calls, a function called twice on one line, calls through function
   pointers (a local and a global), PLT calls, a tail call. noipa keeps every call a real call at -O2
   (no inlining, no cloning), as code from another unit would be. */
#include <stdio.h>
#include <string.h>

__attribute__((noipa)) int g(int x)
{
    return x * 2 + 1;
}

__attribute__((noipa)) int h(int x)
{
    return x * 3 - 1;
}

__attribute__((noipa)) int f(int a, int b)
{
    return a - b;
}

__attribute__((noipa)) int twice(int x)
{
    return x + 7;
}

__attribute__((noipa)) int square(int x)
{
    return x * x;
}

__attribute__((noipa)) int cube(int x)
{
    return x * x * x;
}

__attribute__((noipa)) int add(int a, int b)
{
    return a + b;
}

/* At -O2 the call ends the function: a tail call, `jmp add`. */
__attribute__((noipa)) int wack(int x)
{
    return add(x, 1); /* TAIL */
}

volatile int sink;
/* volatile: the call through it stays indirect at -O2 */
int (*volatile global_op)(int) = square;

/* Changes the pointer a later call of the same line goes through. */
__attribute__((noipa)) int swap_op(void)
{
    global_op = cube;
    return 0;
}

int main(int argc, char **argv)
{
    int (*fp)(int) = argc > 5 ? square : cube;
    sink = f(g(argc), h(argc + 1)); /* NESTED */
    sink = twice(argc) + twice(argc + 1); /* TWICE */
    sink = fp(argc + 2); /* FPTR */
    sink = global_op(argc + 3); /* GLOBAL_FPTR */
    sink = (int)strlen(argv[0]); /* PLT */
    puts("done"); /* PUTS */
    sink = wack(argc);
    sink = swap_op() + global_op(argc); /* SWAPPED */
    return 0;
}
