/* Stepping, conditions and callbacks through libc: the engine's control sample. */
#include <stdio.h>
#include <stdlib.h>

int calls;

int square(int v)
{
    int r = v * v;
    calls++;
    return r;
}

int depth(int n)
{
    if (n == 0)
        return 0;
    return 1 + depth(n - 1);
}

double half(double x)
{
    return x / 2;
}

static int compare(const void *a, const void *b)
{
    int x = *(const int *)a;
    int y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    int total = 0;
    for (int i = 0; i < 10; i++) {
        total += square(i);
    }
    int d = depth(3);
    double h = half(5.0);
    int data[5] = {4, 2, 5, 1, 3};
    qsort(data, 5, sizeof data[0], compare);
    printf("%d %d %f %d\n", total, d, h, data[0]);
    return total % 7;
}
