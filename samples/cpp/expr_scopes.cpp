// Qualified names for tests/scopes_gdb.rs: nested namespaces, a global defined outside
// its namespace, static members (one of a template), enums and enum classes in
// namespaces, the same name at file scope and in two namespaces, a class in a
// namespace with a method, and a function of a namespace defined outside it. Stopped in
// main, in geo::Shape::area and in geo::inner::scale (called with k = 0..5, where the
// conditions of breakpoints read qualified names); every expression is compared with
// gdb's `output`.
#include <cstdio>

int counter = -5;
static int hidden = 11;

namespace geo {
int counter = 7;
extern int defined_outside;
struct Pt {
    int x, y;
};
enum Color { Red, Green = 5, Blue };
enum class Mode : short { Fast = 3, Slow };
namespace inner {
int counter = 70;
int depth = 2;
struct Pt {
    long a, b, c;
};
enum class Level { Low = -1, High = 1 };
int scale(int k);
} // namespace inner
class Shape {
  public:
    static int made;
    static const int sides = 4;
    int id;
    Mode mode;
    int area() const;
};
int area(Pt p);
} // namespace geo

int geo::defined_outside = 21;
int geo::Shape::made = 3;

struct S {
    static int total;
    static double ratio;
    int v;
};
int S::total = 42;
double S::ratio = 0.5;

template <typename T> struct Box {
    static int count;
    T value;
};
template <typename T> int Box<T>::count = 1;

int geo::inner::scale(int k) {
    inner::Pt big{1, 2, 3};
    int r = k * depth + counter + (int)big.c;
    return r; // SCOPES NAMESPACE
}

int geo::Shape::area() const {
    int a = id * sides + made;
    return a; // SCOPES METHOD
}

int geo::area(Pt p) {
    Pt q = p;
    return q.x * q.y + counter;
}

int main() {
    geo::Pt p{3, 4};
    geo::Color c = geo::Blue;
    geo::Mode m = geo::Mode::Slow;
    geo::inner::Level l = geo::inner::Level::Low;
    geo::Shape shape{6, geo::Mode::Fast};
    S s{1};
    Box<int> b{5};
    Box<int>::count += 8;
    int r = geo::area(p) + shape.area(); // SCOPES MAIN
    for (int k = 0; k < 6; k++)
        r += geo::inner::scale(k);
    std::printf("%d %d %d %d %d %d %d\n", r, (int)c, (int)m, (int)l, s.v, b.value, hidden);
    return 0;
}
