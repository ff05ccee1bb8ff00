/* The README's first sample: shapes in an array of structs and a recursive sum over them. */
#include <stdio.h>

struct point {
    int x, y;
};

struct shape {
    const char *name;
    struct point corner;
    int sides;
    double area;
};

static int total_sides(const struct shape *shapes, int n)
{
    if (n == 0)
        return 0;
    int here = shapes[n - 1].sides;
    return here + total_sides(shapes, n - 1);
}

int main(int argc, char **argv)
{
    struct shape shapes[3] = {
        {"triangle", {0, 0}, 3, 6.0},
        {"square", {1, 2}, 4, 16.0},
        {"hexagon", {-3, 5}, 6, 41.5},
    };
    (void)argv;
    int sides = total_sides(shapes, 3);
    printf("%d sides in total\n", sides);
    return sides == 13 ? 0 : 1;
}
