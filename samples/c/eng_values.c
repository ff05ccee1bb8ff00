/* Values of every C kind, recursion and shadowing: the engine's differential sample. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum color { RED, GREEN = 5, BLUE };
enum flags { F_READ = 1, F_WRITE = 2, F_EXEC = 4 };

struct point {
    int x;
    int y;
};

struct bits {
    unsigned int a : 3;
    signed int b : 5;
    unsigned int c : 1;
    int rest;
};

union number {
    int i;
    float f;
    unsigned char bytes[4];
};

typedef struct node {
    int value;
    struct node *next;
} node_t;

struct shape {
    char name[8];
    struct point corners[2];
    enum color color;
    double area;
};

int counter = 7;
static long total = -12345678901L;
const char *greeting = "hello, world";
struct point origin = {1, -2};
int table[5] = {10, 20, 30, 40, 50};

int fact(int n)
{
    int result;
    if (n <= 1) {
        result = 1;
    } else {
        result = n * fact(n - 1);
    }
    return result;
}

double average(const int *values, int count)
{
    double sum = 0;
    for (int i = 0; i < count; i++) {
        sum += values[i];
    }
    return sum / count;
}

int shadow(int x)
{
    int y = x + 1;
    {
        int x = y * 2;
        {
            int y = x + 3;
            counter += y;
        }
    }
    return y;
}

void inspect(struct shape *s, union number *num, node_t *list, struct bits bf)
{
    static int calls = 0;
    char c = 'Q';
    unsigned char uc = 200;
    short sh = -300;
    unsigned short ush = 65000;
    long long ll = -9000000000LL;
    unsigned long long ull = 18000000000000000000ULL;
    bool ok = true;
    float f = 1.1f;
    double d = 3.14;
    enum color col = BLUE;
    enum flags fl = F_READ | F_EXEC;
    enum color odd = (enum color)42;
    int *nothing = NULL;
    const char *msg = "multi\nline \"quoted\"";
    struct point pts[3] = {{1, 2}, {3, 4}, {5, 6}};
    int grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
    calls++;
    printf("%s %d %d %d %p %s %d %d\n", s->name, num->i, list->value, bf.b, (void *)nothing, msg,
           pts[1].x, grid[1][2]);
    (void)c, (void)uc, (void)sh, (void)ush, (void)ll, (void)ull, (void)ok, (void)f, (void)d;
    (void)col, (void)fl, (void)odd;
}

int vla_sum(int n)
{
    int squares[n];
    int sum = 0;
    for (int k = 0; k < n; k++)
        squares[k] = k * k;
    for (int k = 0; k < n; k++)
        sum += squares[k];
    return sum;
}

int main(int argc, char **argv)
{
    struct shape sq;
    memset(&sq, 0, sizeof sq);
    strcpy(sq.name, "square");
    sq.corners[0] = (struct point){0, 0};
    sq.corners[1] = (struct point){4, 4};
    sq.color = GREEN;
    sq.area = 16.5;
    union number num;
    num.f = 2.5f;
    node_t third = {3, NULL};
    node_t second = {2, &third};
    node_t first = {1, &second};
    struct bits bf = {5, -7, 1, 99};
    int values[4] = {3, 5, 8, 13};
    int (*op)(int) = fact;
    char *none = NULL;
    long double ratio = -2.0L / 3;
    long double tiny = 1e-30L;
    char padded[24] = "hi\tthere";
    struct point *bad = (struct point *)16;
    printf("fact %d %p\n", op(4), (void *)none);
    printf("avg %f\n", average(values, 4));
    printf("shadow %d\n", shadow(argc));
    inspect(&sq, &num, &first, bf);
    printf("%s %p %d %s %ld %d %Lg\n", padded, (void *)bad, vla_sum(argc + 3), greeting, total, origin.x + table[2] + (argv[0] != NULL), ratio + tiny);
    return 3;
}
