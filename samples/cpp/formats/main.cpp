// The debug-formats sample (tests/debug_formats.rs): the same program built plain, with
// split DWARF (.dwo, .dwp), compressed sections, .gdb_index and .debug_names.
#include <cstdio>
#include "shapes.h"

static int counter = 7;

int main(int argc, char **) {
    std::vector<shapes::Rect> rects{{3, 4, 1.5}, {5, 6, 0.5}};
    shapes::Tagged<double> label{2.25, "label"};
    double t = shapes::total(rects);
    counter += argc;
    std::printf("%g %g %d\n", t, label.value, counter); // main prints
    return 0;
}
