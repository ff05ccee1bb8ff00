// Sample for tests/cpp_more.rs (g++ -std=c++20): the rest of libstdc++'s types gdb's
// printers know (array, pair, tuple, sets, multimaps, bitset, string_view, span, atomic,
// chrono, any, function, weak_ptr, iterators) in one function, stopped at the marked
// return and compared with gdb's libstdc++ printers.
#include <any>
#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <deque>
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

static int twice(int x) { return 2 * x; }

static int more(int scale) {
    std::array<int, 3> arr = {1, 2, 3};
    std::pair<int, double> pr = {4, 0.5};
    std::tuple<int, char, long> tup = {7, 'x', 9L};
    std::set<int> st = {3, 1, 2};
    std::multiset<int> ms = {1, 1, 2};
    std::unordered_set<int> us = {5};
    std::multimap<int, int> mm = {{1, 10}, {1, 11}};
    std::unordered_multimap<int, int> umm = {{2, 20}};
    std::bitset<8> bits(0x5);
    std::string_view sv = "view";
    std::atomic<int> at(13);
    std::chrono::milliseconds ms_dur(250);
    std::chrono::seconds secs(3);
    std::any anything = 42;
    std::any none_any;
    std::any text_any = std::string("boxed");
    std::function<int(int)> fn = twice;
    std::function<int(int)> no_fn;
    std::function<int(int)> lam = [scale](int x) { return x * scale; };
    std::shared_ptr<int> owner = std::make_shared<int>(8);
    std::weak_ptr<int> weak = owner;
    std::vector<int> v = {6, 7};
    std::vector<int>::iterator vit = v.begin() + 1;
    std::list<int> lst = {3, 4};
    std::list<int>::iterator lit = lst.begin();
    std::map<int, int> m = {{1, 2}};
    std::map<int, int>::iterator mit = m.begin();
    std::deque<int> dq = {21, 22};
    std::deque<int>::iterator dit = dq.begin() + 1;
    std::forward_list<int> fl = {31};
    std::forward_list<int>::iterator fit = fl.begin();
    std::unordered_map<int, int> um = {{5, 50}};
    std::unordered_map<int, int>::iterator uit = um.begin();
    int raw[3] = {41, 42, 43};
    std::span<int> span_dyn(raw, 3);
    std::span<int, 2> span_fixed(raw + 1, 2);
    std::shared_ptr<int> gone = std::make_shared<int>(9);
    std::weak_ptr<int> expired = gone;
    gone.reset();
    std::unique_ptr<int> no_up;
    int total = arr[1] + pr.first + std::get<0>(tup) + (int)st.size() + (int)ms.size() +
                (int)us.size() + (int)mm.size() + (int)umm.size() + (int)bits.count() +
                (int)sv.size() + at.load() + (int)ms_dur.count() + (int)secs.count() +
                (anything.has_value() ? 1 : 0) + (none_any.has_value() ? 1 : 0) + (text_any.has_value() ? 1 : 0) + fn(1) +
                (no_fn ? 1 : 0) + lam(0) + (int)weak.use_count() + *vit + *lit + mit->second + *dit + *fit +
                uit->second + span_dyn[0] + span_fixed[1] + (int)expired.use_count() +
                (no_up ? 1 : 0);
    return total * scale; // break in more
}

// Makes the vector's end lie far beyond its memory for one stop (libstdc++'s layout:
// start, finish, end of storage), then repairs it: a renderer shows an error node with
// what it could read.
static int corrupt(std::vector<int> &huge) {
    int **parts = reinterpret_cast<int **>(&huge);
    int *saved = parts[1];
    parts[1] = parts[0] + (1L << 40);
    int n = (int)huge.capacity(); // break in corrupt
    parts[1] = saved;
    return n;
}

int main() {
    std::vector<int> three = {1, 2, 3};
    return more(1) > 0 && corrupt(three) >= 3 ? 0 : 1;
}
