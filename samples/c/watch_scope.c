/* Data breakpoints on locals end with their frame (tests/watch_scope.rs): functions
 * called from the same place in main whose first local shares one stack slot, a
 * recursion, a longjmp out of a frame, and writes stepped over. Every case is compared
 * with gdb 13; the markers in comments are what the test looks lines up by. */
#include <setjmp.h>
#include <stdio.h>
#include <unistd.h>

int g_sink;
static jmp_buf g_env;

__attribute__((noinline)) int prime(int v)
{
    int slot = v + 100;                           /* prime line */
    g_sink += slot;
    return slot;
}

__attribute__((noinline)) int fill(int seed)
{
    int acc = seed;                               /* fill first line */
    g_sink += acc;
    acc = acc * 3;                                /* fill triple line */
    g_sink += acc;
    acc += 3;                                     /* fill add line */
    return acc;                                   /* fill return line */
}

__attribute__((noinline)) int reuse(int v)
{
    int other = v;                                /* reuse line */
    other += 1;                                   /* reuse add line */
    return other;
}

__attribute__((noinline)) int rec(int n)
{
    int local = n * 10;                           /* rec first line */
    if (n > 0)
        local += rec(n - 1);                      /* rec call line */
    local += 1;                                   /* rec add line */
    return local;
}

__attribute__((noinline)) void jumper(int n)
{
    int hop = n;                                  /* jumper line */
    hop += 1;                                     /* jumper add line */
    g_sink += hop;
    longjmp(g_env, 1);                            /* jumper jump line */
}

__attribute__((noinline)) void bump(int *p)
{
    *p += 5;                                      /* bump line */
}

__attribute__((noinline)) int stepped(int v)
{
    int mine = v;                                 /* stepped first line */
    bump(&mine);                                  /* stepped bump line */
    g_sink += 1;                                  /* stepped sink line */
    return mine;                                  /* stepped return line */
}

int main(void)
{
    int p = prime(1);                             /* prime call line */
    int a = fill(5);                              /* fill call line */
    int b = reuse(a);                             /* reuse call line */
    int r = rec(2);                               /* rec call in main */
    if (setjmp(g_env) == 0) {
        jumper(7);                                /* jumper call line */
        g_sink = -1;                              /* never reached: jumper jumps */
    }
    int c = reuse(r);                             /* reuse after jump line */
    int s = stepped(4);                           /* stepped call line */
    (void)getppid();                              /* syscall line */
    printf("%d %d %d %d %d %d %d\n", p, a, b, r, c, s, g_sink); /* done line */
    return 0;
}
