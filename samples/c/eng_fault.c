/* Signal stops: a NULL dereference (default), abort(), an integer division by zero
   and a stray int3, chosen by the first argument. */
#include <stdlib.h>
#include <string.h>

int *nowhere;
volatile int zero;

static int deref(int *p)
{
    return *p; /* segv */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    if (strcmp(mode, "abort") == 0)
        abort(); /* abort */
    if (strcmp(mode, "fpe") == 0)
        return 10 / zero; /* fpe */
    if (strcmp(mode, "trap") == 0) {
        __asm__ volatile("int3"); /* trap */
        return 3;
    }
    return deref(nowhere);
}
