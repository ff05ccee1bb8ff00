// Sample for crates/symbols tests: C++ names.
#include <cstdio>

namespace geo {
class Shape {
public:
    explicit Shape(int sides) : sides_(sides) {}
    int area(int scale) const { return sides_ * scale; }
    static int count() { return 3; }
private:
    int sides_;
};

int helper(int x) { return x + 1; }

template <typename T>
T twice(T v)
{
    return v + v;
}
}

int main(int argc, char **)
{
    geo::Shape s(argc + 3);
    std::printf("%d %d %d\n", s.area(2), geo::Shape::count(), geo::helper(argc));
    std::printf("%d %f\n", geo::twice(argc), geo::twice(1.5));
    return 0;
}
