/* The value probe of tests/shapes_gdb.rs, in the spirit of gdb's testsuite: the corners
 * of C's data layout — array bounds in one-byte forms, VLAs of one and two dimensions,
 * flexible array members on the heap, signed enum bitfields, bitfields across bytes,
 * anonymous struct and union members, _Complex of every width, const volatile, odd-sized
 * structs by value, arrays of structs, nested arrays, pointers to arrays, function
 * pointers, and pointers gcc -O2 optimizes away (`DW_OP_implicit_pointer`: to a struct,
 * into an array, to a string literal). Built -O0 and -O2; every argument, local and global at each `STOP` line is
 * compared with gdb. `sink` keeps values alive at -O2 without changing them. */
#include <stdlib.h>
#include <string.h>

enum mode { MODE_RUN = 1, MODE_IDLE = 2, MODE_HALT = -3 };
enum small { S_A, S_B, S_C };

struct flags {
    enum mode m : 3;
    unsigned lo : 5;
    unsigned across : 9; /* crosses a byte boundary */
    int s : 4;
    enum small k : 2;
    unsigned long wide : 40;
};

struct flex {
    int n;
    int d[];
};

struct anon {
    int tag;
    union {
        int i;
        float f;
    };
    struct {
        short x, y;
    };
};

struct odd3 {
    char a, b, c;
};

struct odd5 {
    char bytes[5];
};

struct odd12 {
    int x;
    short y;
    char z[5];
};

struct point {
    int x, y;
};

typedef int (*binop_fn)(int, int);

unsigned char g_table[256];
char g_buf[200] = "a buffer of two hundred";
int g_grid[3][150];
int g_matrix[2][3][4];
struct point g_points[3] = {{1, 2}, {3, 4}, {5, 6}};
const volatile int g_cv = 77;
float _Complex g_cf = 1.5f + 2.5fi;
double _Complex g_cd = -0.25 + 4.0i;
long double _Complex g_cld = 3.0L - 1.0Li;
long double g_ld = 2.75L;
struct flags g_flags = {MODE_HALT, 17, 300, -5, S_C, 0x123456789aUL};
struct anon g_anon = {7, {.i = 1078530011}, {-2, 9}};
int (*g_row)[4] = &g_matrix[1][2];

__attribute__((noinline)) void sink(const void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static int add(int a, int b)
{
    return a + b;
}

__attribute__((noinline)) int by_value(struct odd3 o3, struct odd5 o5, struct odd12 o12,
                                       struct point pt, double _Complex z)
{
    int r = o3.a + o5.bytes[4] + o12.z[1] + pt.y + (int)__real__ z;
    sink(&o3);
    sink(&o5);
    sink(&o12);
    sink(&pt);
    sink(&z);
    sink(&r); /* STOP by_value */
    return r;
}

__attribute__((noinline)) int arrays(int n, int m)
{
    int vla[n];
    int vla2[n][m];
    struct point pts[2] = {{10, 20}, {30, 40}};
    char name[12] = "nested";
    int nest[2][2] = {{1, 2}, {3, 4}};
    int (*prow)[2] = &nest[1];
    for (int i = 0; i < n; i++) {
        vla[i] = i * 3;
        for (int j = 0; j < m; j++)
            vla2[i][j] = i * 10 + j;
    }
    sink(vla);
    sink(vla2);
    sink(pts);
    sink(name);
    sink(nest);
    sink(&prow); /* STOP arrays */
    return vla[n - 1] + vla2[n - 1][m - 1];
}

__attribute__((noinline)) int records(struct flex *fx, binop_fn op)
{
    struct flags f = {MODE_IDLE, 3, 511, 7, S_B, 1};
    struct anon a = {1, {.f = 0.5f}, {3, 4}};
    const volatile short cvs = -12;
    float _Complex cf = 0.5f - 0.25fi;
    double _Complex cd = 1.0 + 1.0i;
    long double _Complex cld = -2.0L + 0.5Li;
    sink(&f);
    sink(&a);
    sink((const void *)&cvs);
    sink(&cf);
    sink(&cd);
    sink(&cld); /* STOP records */
    return fx->d[fx->n - 1] + op(f.lo, a.tag);
}

struct pair {
    int x;
    int y;
};

static volatile int g_implicit_sink;

/* At -O2 none of these pointers exists: gdb shows `<synthetic pointer>` and reads
 * through them. No address of theirs escapes (no sink(&...)). */
__attribute__((noinline)) int implicit(int q)
{
    struct pair p = {q, q * 2};
    struct pair *pp = &p;
    const char *msg = "hello";
    int arr[3] = {q, q + 1, q + 2};
    int *ap = &arr[1];
    g_implicit_sink = pp->y + msg[1] + ap[1]; /* STOP implicit */
    return pp->x + ap[-1];
}

int main(void)
{
    struct odd3 o3 = {'x', 'y', 'z'};
    struct odd5 o5 = {{1, 2, 3, 4, 5}};
    struct odd12 o12 = {-1, 2, "abcd"};
    struct point pt = {8, -9};
    struct flex *fx = malloc(sizeof *fx + 4 * sizeof(int));
    fx->n = 4;
    for (int i = 0; i < 4; i++)
        fx->d[i] = 100 + i;
    g_table[1] = 200;
    g_table[255] = 9;
    g_grid[2][149] = -7;
    g_grid[1][0] = 5;
    g_matrix[1][2][3] = 42;
    int total = by_value(o3, o5, o12, pt, 2.0 - 3.0i);
    total += arrays(3, 2);
    total += records(fx, add);
    total += implicit(total & 7);
    sink(&total);
    free(fx);
    return total == 12345;
}
