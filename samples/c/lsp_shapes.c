/* lsp_shapes.c: a small program for tandem's language-server tests (built with gcc -g -O0). */

struct point {
    char tag;
    double x;
    int y;
};

enum color { RED, GREEN, BLUE };

typedef struct point point_t;

/* é😀 */ int counter = 0;

static double scale = 2.5;

int area(int width, int height) {
    int product = width * height;
    return product;
}

double shift(struct point *p, double dx) {
    double moved = p->x + dx;
    counter++;
    return moved * scale;
}

int main(void) {
    struct point origin = { 'o', 1.0, 2 };
    point_t copy = origin;
    enum color c = GREEN;
    int a = area(3, 4);
    double s = shift(&copy, 0.5);
    return (a + (int)s + (int)c) == 0;
}

struct flags {
    unsigned int ready : 1;
    unsigned int mode : 3;
    short level;
    long total;
} settings;
