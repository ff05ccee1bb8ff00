// Sample for crates/engine value tests: libstdc++ types (string, vector, map,
// unordered_map, unique_ptr, shared_ptr), references, a class with a base class and
// `this`, stopped in `Circle::describe` and in `inspect`, and compared with gdb's
// libstdc++ pretty printers.
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

struct Shape {
    std::string name;
    int sides;
    virtual ~Shape() {}
};

struct Circle : Shape {
    double radius;
    Circle(double r) : radius(r) {
        name = "circle";
        sides = 0;
    }
    double describe(int scale) {
        double area = radius * radius * 3 * scale;
        return area; // break in method
    }
};

static int inspect(const std::string &ref, std::vector<int> &nums) {
    std::string greeting = "hello, world";
    std::string empty;
    std::vector<std::string> words = {"one", "two", "three"};
    std::map<std::string, int> ages = {{"ann", 31}, {"bob", 42}};
    std::unordered_map<int, std::string> names = {{1, "one"}};
    std::unique_ptr<Circle> owned(new Circle(2.0));
    std::shared_ptr<int> shared = std::make_shared<int>(7);
    std::shared_ptr<int> shared2 = shared;
    std::unique_ptr<int> none;
    int total = (int)ref.size() + (int)nums.size() + (int)greeting.size() + (int)words.size() +
                (int)ages.size() + (int)names.size() + *shared + (int)empty.size();
    total += (int)owned->describe(1);
    return total; // break in inspect
}

static void thrower(int n) {
    if (n > 2)
        throw std::runtime_error("too big");
}

int main() {
    std::string s = "reference";
    std::vector<int> v = {1, 2, 3};
    int t = inspect(s, v);
    try {
        thrower(t);
    } catch (const std::exception &e) {
        t = 1;
    }
    return t == 1 ? 0 : 1;
}
