// Sample for tests/cpp_values.rs: libstdc++'s everyday types (optional, variant,
// deque, list, forward_list, map, unordered_map, shared_ptr, unique_ptr, vector) in
// one function, stopped at the marked return and compared with gdb's libstdc++ printers;
// and a list and a map made cyclic for one stop.
#include <deque>
#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

struct Tagged {
    int tag;
    double weight;
};

static int stl(int scale) {
    std::optional<int> maybe = 5;
    std::optional<int> nothing;
    std::optional<std::string> word = std::string("hi");
    std::variant<int, double, std::string> var = 2.5;
    std::variant<int, std::string> vs = std::string("alt");
    std::deque<int> dq = {10, 20, 30, 40};
    std::deque<int> empty_dq;
    std::list<int> lst = {7, 8, 9};
    std::forward_list<int> fl = {4, 5};
    std::map<std::string, int> ages = {{"ann", 31}, {"bob", 42}};
    std::unordered_map<int, int> codes = {{1, 100}, {2, 200}, {3, 300}};
    std::shared_ptr<Tagged> sp = std::make_shared<Tagged>(Tagged{11, 1.5});
    std::unique_ptr<int> up(new int(77));
    std::vector<int> v = {3, 1, 4, 1, 5};
    std::vector<int> none;
    int total = *maybe + (int)nothing.has_value() + (int)word->size() + (int)var.index() +
                (int)vs.index() + dq[1] + (int)empty_dq.size() + (int)lst.size() + fl.front() +
                ages["bob"] + codes[2] + sp->tag + *up + (int)v.size() + (int)none.size();
    return total * scale; // break in stl
}

// Makes the list's second node link to itself and the map's last node link back to
// its root (left) for one stop (the node layouts are libstdc++'s: a list node's `next`
// first; a tree iterator's `_M_node` is public), then repairs both: a renderer must
// stop, not hang.
static int corrupt(std::list<int> &broken, std::map<int, int> &tree) {
    void **head = reinterpret_cast<void **>(&broken);
    void **first = static_cast<void **>(head[0]);
    void **second = static_cast<void **>(first[0]);
    void *saved = second[0];
    second[0] = second;
    std::_Rb_tree_node_base *last = tree.find(3)._M_node;
    last->_M_left = tree.find(2)._M_node;
    int n = (int)broken.size() + (int)tree.size(); // break in corrupt
    last->_M_left = nullptr;
    second[0] = saved;
    return n;
}

int main() {
    std::list<int> three = {1, 2, 3};
    std::map<int, int> tree = {{1, 10}, {2, 20}, {3, 30}};
    return stl(1) > 0 && corrupt(three, tree) == 6 ? 0 : 1;
}
