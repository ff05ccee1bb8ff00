/* The expression probe of tests/expressions_gdb.rs: one source built as C (gcc) and as
 * C++ (g++), stopped at `probe`'s marked line, where each expression of the test is
 * evaluated by tandem and by gdb's `print`. Globals, a linked list, arrays of every
 * shape, enumerators and a struct with a typedef'd pointer member. */
#include <stdio.h>
#include <string.h>

enum color { RED, GREEN = 5, BLUE };

typedef struct node {
    int value;
    const char *name;
    struct node *next;
    char tag[8];
} node_t;

typedef char *str_t;

struct holder {
    node_t *head;
    int counts[4];
    unsigned char small;
    short neg;
    double ratio;
    enum color hue;
    str_t label;
};

int g_int = 42;
unsigned int g_uint = 4000000000u;
long g_long = -1234567890123L;
double g_double = 2.5;
char g_char = 'Z';
const char *g_words[3] = {"alpha", "beta", "gamma"};
int g_grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
enum color g_color = BLUE;
char g_text[16] = "probe text";

int probe(int argc, char **argv, struct holder *h, node_t *n)
{
    int i = 2;
    int arr[5] = {10, 20, 30, 40, 50};
    int *p = &arr[1];
    int *q = &arr[4];
    char *s = g_text;
    unsigned u = 7;
    int neg = -9;
    double d = 0.25;
    const int ci = 3;
    volatile long vl = 100;
    int sum = 0;
    sum += argc + i + arr[0] + *p + *q + (int)u + neg + (int)d + ci + (int)vl + s[0]; /* EXPR HERE */
    return sum + h->small + n->value + (argv != 0);
}

int main(int argc, char **argv)
{
    static node_t third = {3, "three", 0, "c"};
    static node_t second = {2, "two", &third, "bb"};
    node_t first = {1, "one", &second, "aaa"};
    struct holder h;
    memset(&h, 0, sizeof h);
    h.head = &first;
    h.counts[0] = 7;
    h.counts[1] = -8;
    h.counts[2] = 9;
    h.counts[3] = 1000;
    h.small = 200;
    h.neg = -300;
    h.ratio = 0.75;
    h.hue = GREEN;
    h.label = g_text;
    int r = probe(argc, argv, &h, &first);
    printf("%d\n", r);
    return 0;
}
