// Sample for tests/cpp_dynamic.rs: pointers and a reference of base-class type to
// objects of derived classes (one reached through a secondary base, so the offset to
// the top applies), stopped at the marked return.
struct Base {
    virtual ~Base() {}
    int base_tag = 1;
};

struct Other {
    virtual ~Other() {}
    int other_tag = 2;
};

struct Derived : Base, Other {
    int derived_only = 7;
    double weight = 2.5;
};

static int look(Base *b, Other *o, Base &r, Base *plain) {
    int n = b->base_tag + o->other_tag + r.base_tag + plain->base_tag;
    return n; // break in look
}

int main() {
    Derived d;
    Base plain;
    return look(&d, &d, d, &plain) > 0 ? 0 : 1;
}
