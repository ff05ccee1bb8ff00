/* Values in every frame of the stack, as gdb's testsuite checks them (funcargs, store,
 * recurse): arguments of every scalar width, floats, long double, small and large
 * structs and unions by value, enums, _Bool, _Complex, pointers; locals kept in
 * callee-saved registers across calls at -O2 (read in outer frames through the CFI);
 * a recursion whose every level has its own locals. tests/frames_values_gdb.rs stops at
 * each STOP line and compares `info args` / `info locals` of every frame with tandem's
 * scopes, built -O0 and -O2. */
#include <math.h>
#include <stdbool.h>
#include <wchar.h>
#include <stdio.h>
#include <string.h>

struct small {
    int a;
    short b;
};

struct big {
    int v[10];
    char tag[6];
};

union mix {
    int i;
    float f;
    unsigned char bytes[4];
};

enum colour { RED = 1, GREEN = 2, BLUE = -4 };

volatile int sink;
int g_counts[8] = {1, 2, 3};
char g_text[16] = "global text";

__attribute__((noinline)) int leaf(int x)
{
    sink = x; /* STOP leaf */
    return x + 1;
}

__attribute__((noinline)) int scalars(char c, unsigned char uc, short s, unsigned short us,
                                      int i, unsigned int ui, long l, unsigned long ul,
                                      long long ll, unsigned long long ull)
{
    int r = 0;
    r = leaf(c + s + i);
    return r + (int)(uc + us + ui + l + ul + ll + ull);
}

__attribute__((noinline)) double floats(float f, double d, long double ld, _Complex double z,
                                        bool flag, enum colour col)
{
    int r = 0;
    r = scalars('x', 200, -3, 60000, -70000, 4000000000u, -5000000000L,
                    10000000000UL, -7LL, 18000000000000000000ULL);
    return f + d + (double)ld + __real__ z + flag + col + r;
}

__attribute__((noinline)) int records(struct small sm, struct big bg, union mix mx,
                                      struct small *psm, const char *name)
{
    _Complex double z = 1.5 + 2.5 * 1.0i;
    double r = 0;
    r = floats(1.25f, -2.5, 3.75L, z, true, BLUE);
    return (int)r + sm.a + bg.v[9] + mx.bytes[0] + psm->b + (int)strlen(name);
}

/* Locals live across calls: at -O2 they sit in callee-saved registers. */
__attribute__((noinline)) int keeper(int seed)
{
    int a = seed * 3;
    int b = seed + 11;
    long c = (long)seed << 20;
    int r1 = 0, r2 = 0;
    r1 = leaf(a);
    r2 = leaf(b);
    return (int)(a + b + c + r1 + r2);
}

struct flags {
    unsigned ready : 1;
    signed level : 3;
    unsigned mode : 4;
};

struct outer {
    struct small in;
    union mix u;
    const char *label;
};

typedef int (*binop)(int, int);

__attribute__((noinline)) int add(int a, int b)
{
    return a + b;
}

/* Inlined into `shapes` at -O2: its own frame with its own arguments and locals. */
static inline __attribute__((always_inline)) int twice(int v, const int *row)
{
    int doubled = v * 2 + row[1];
    return leaf(doubled) + doubled;
}

__attribute__((noinline)) int shapes(struct flags fl, struct outer out, binop op, int arr[],
                                     int grid[][3], const char *const word, float scale)
{
    static int calls;
    float scaled = scale * 4.0f;
    long double wide = 2.5L * scale;
    calls++;
    int t = twice(op(arr[0], grid[1][2]), arr);
    return t + fl.level + out.in.a + word[0] + (int)scaled + (int)wide + calls;
}

/* Its locals are set before any stop reads them (a caller's uninitialised locals are
 * whatever its stack held, which differs between gdb's run and tandem's). */
__attribute__((noinline)) int run_shapes(void)
{
    struct flags fl = {1, -3, 9};
    struct outer out = {{4, 5}, {0x61626364}, "outer"};
    int arr[4] = {10, 20, 30, 40};
    int grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
    int zeros[25] = {0, 0, 0, 7};
    return shapes(fl, out, add, arr, grid, "word", 0.75f) + zeros[3];
}

struct node {
    int val;
    struct node *next;
};

struct __attribute__((packed)) packed {
    char c;
    int i;
    short s;
};

/* Values whose text has its own rules in gdb: special floats, wide strings, signed and
 * unsigned chars at their limits, 128-bit integers, null and odd pointers, pointers
 * into globals and to functions (`<g_counts+8>`, `<leaf>`), arrays of
 * floats, bools and enums, a linked list, a packed struct. */
__attribute__((noinline)) int odd_values(int n)
{
    float fs[4] = {INFINITY, -INFINITY, NAN, -0.0f};
    double ds[3] = {1e-310, 1.0 / 3.0, -1e300};
    long double lds[2] = {1.0L / 3.0L, -2.5L};
    bool flags[5] = {true, false, true, true, false};
    enum colour cols[3] = {RED, BLUE, GREEN};
    signed char sc = -1;
    unsigned char uc = 255;
    __int128 big = (__int128)1 << 100;
    unsigned __int128 ubig = ~(unsigned __int128)0;
    wchar_t wide[6] = L"wide";
    const wchar_t *wp = L"pointer";
    const char *nul = 0;
    void *vp = (void *)0x1234;
    const char *bytes = "\x01\x7f\xff";
    struct node tail = {2, 0};
    struct node head = {1, &tail};
    struct packed pk = {'p', 0x01020304, -5};
    double ratio = n / 7.0;
    int *into = &g_counts[2];
    char *text = g_text + 7;
    int (*fn)(int) = leaf;
    sink = n; /* STOP odd */
    return (int)(fs[3] + ds[1] + lds[0] + flags[2] + cols[1] + sc + uc + (int)big +
                 (int)ubig + wide[0] + wp[0] + (nul != 0) + (vp != 0) + bytes[0] +
                 head.next->val + pk.i + ratio + *into + text[0] + (fn != 0));
}

__attribute__((noinline)) int recurse(int depth, int acc)
{
    int here = depth * 10 + acc;
    if (depth == 0) {
        sink = here; /* STOP bottom */
        return here;
    }
    int below = 0;
    below = recurse(depth - 1, acc + depth);
    return below + here;
}

int main(void)
{
    struct small sm = {7, -2};
    struct big bg;
    for (int k = 0; k < 10; k++)
        bg.v[k] = k * k;
    memcpy(bg.tag, "probe", 6);
    union mix mx;
    mx.i = 0x41424344;
    int total = 0;
    total = records(sm, bg, mx, &sm, "frames");
    total += keeper(5);
    total += run_shapes();
    total += recurse(3, 1);
    total += odd_values(3);
    printf("%d\n", total);
    return 0;
}
