/* Sample for crates/symbols tests: lines, inlining, scopes, types. */
#include <stdio.h>
#include <stdlib.h>

struct Flags {
    unsigned int ready : 1;
    unsigned int mode : 3;
    int level : 5;
    unsigned char tag;
    long big;
};

struct Point {
    int x;
    int y;
};

union Number {
    int i;
    double d;
    char bytes[8];
};

enum Color { RED, GREEN = 4, BLUE };
enum Perm { PERM_R = 1, PERM_W = 2, PERM_X = 4 };

typedef int (*binop_fn)(int, int);

struct Shape {
    const char *name;
    struct Point corners[4];
    int grid[2][3];
    union Number num;
    enum Color color;
    binop_fn op;
    volatile int counter;
    struct Flags flags;
};

struct Packet {
    int len;
    char data[];
};

int global_counter = 7;
static double scale = 2.5;
struct Point origin = {1, 2};

static inline int square(int v)
{
    return v * v;
}

int add(int a, int b)
{
    int sum = a + b;

    return sum;
}

int compute(int n)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int total = i * 2;
        global_counter += total;
    }
    {
        int inner = square(n);
        total += inner;
    }
    return total + add(n, 1);
}

int main(int argc, char **argv)
{
    struct Shape shape = {0};
    struct Packet *p = malloc(sizeof(struct Packet) + 4);
    shape.name = "box";
    shape.corners[1].x = argc;
    shape.op = add;
    shape.flags.mode = 5;
    shape.flags.level = -3;
    p->len = 4;
    int result = compute(argc + 3);
    printf("%d %s %f %d\n", result, shape.name, scale, origin.x);
    free(p);
    return result > 1000 ? 1 : 0;
}

/* Used only so that the compiler emits the flag-like enum. */
enum Perm default_perm = PERM_R | PERM_W;

/* A variable-length array: its bound is computed at run time. */
int vla_sum(int n)
{
    int values[n];
    int sum = 0;
    for (int i = 0; i < n; i++)
        values[i] = i;
    for (int i = 0; i < n; i++)
        sum += values[i];
    return sum;
}
