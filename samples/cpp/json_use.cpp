// Sample for tests/cpp_json.rs: a small program over nlohmann-json (Debian's
// nlohmann-json3-dev, header-only), built -O0 and -O2 by the test; frames, arguments
// and locals at function breakpoints are compared with gdb's.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using nlohmann::json;

__attribute__((noinline)) static std::string greet(const std::string &name, int times) {
    std::string out;
    for (int i = 0; i < times; i++) {
        out += name;
    }
    return out;
}

__attribute__((noinline)) static double total(const std::vector<double> &xs, double bias) {
    double sum = bias;
    for (double x : xs) {
        sum += x;
    }
    return sum;
}

__attribute__((noinline)) static int count_numbers(const json &j, int depth) {
    int n = 0;
    if (j.is_number()) {
        return 1;
    }
    if (!j.is_structured()) {
        return 0;
    }
    for (const auto &item : j) {
        n += count_numbers(item, depth + 1);
    }
    return n;
}

int main() {
    json doc = json::parse(R"({"name": "ann", "scores": [1.5, 2.5, 4], "nested": {"k": 7}})");
    std::vector<double> xs = doc["scores"].get<std::vector<double>>();
    std::string name = doc["name"].get<std::string>();
    std::string g = greet(name, 2);
    double t = total(xs, 0.5);
    int c = count_numbers(doc, 0);
    return (g.size() == 6 && t == 8.5 && c == 4) ? 0 : 1;
}
