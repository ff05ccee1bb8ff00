//! Tail-call shapes for tests/frames_gdb.rs: at -O2 gcc turns `return f(...)` into a
//! jump, and gdb rebuilds the frames the jumps removed from DW_TAG_call_site.
#include <stdio.h>

#define LEAF __attribute__((noipa))

volatile int sink;
volatile int knob = 1;

/* A single tail call: main -> wack -(tail)-> add. */
LEAF int add(int a, int b) {
    sink = a + b; /* STOP add */
    return sink * 2;
}

LEAF int wack(int x) {
    sink = x;
    return add(x, 7);
}

/* A chain of three: main -> ca -(tail)-> cb -(tail)-> cc. */
LEAF int cc(int v) {
    sink = v; /* STOP cc */
    return sink + 3;
}

LEAF int cb(int v) {
    sink = v + 1;
    return cc(v + 1);
}

LEAF int ca(int v) {
    sink = v + 2;
    return cb(v + 2);
}

/* A parameter read by entry value: main -> ev_mid -(tail)-> ev_leaf(42). */
LEAF int ev_leaf(int p) {
    sink = p * 5;
    sink = 0; /* STOP ev_leaf */
    return 1;
}

LEAF int ev_mid(int x) {
    sink = x;
    return ev_leaf(42);
}

/* A non-tail call mixed in: main -> mixed -> first (a real call), then
   mixed -(tail)-> second. */
LEAF int first(int v) {
    sink = v; /* STOP first */
    return sink + 1;
}

LEAF int second(int v) {
    sink = v; /* STOP second */
    return sink - 1;
}

LEAF int mixed(int x) {
    int r = first(x);
    sink = r;
    return second(r + 1);
}

/* Ambiguous: amb tail-calls p1 or p2, each tail-calls fin; gdb rebuilds nothing. */
LEAF int fin(int v) {
    sink = v; /* STOP fin */
    return sink;
}

LEAF int p1(int v) {
    sink = 1;
    return fin(v + 10);
}

LEAF int p2(int v) {
    sink = 2;
    return fin(v + 20);
}

LEAF int amb(int v) {
    if (knob)
        return p1(v);
    return p2(v);
}

/* Parameters assigned before their first use: at -O2 gcc drops `a = 10` into a
 * constant, and the location list holds, at the function's first address, an empty
 * range (a location view) saying where `a` was passed: gdb shows a=1 there. */
LEAF int reassigned(int a, int b, int c) {
    a = 10;
    b = a + c;
    sink = b;
    c = 0;
    return a + b + c;
}

int main(void) {
    int total = 0;
    total += wack(knob + 2);
    total += ca(knob + 4);
    total += ev_mid(knob + 6);
    total += mixed(knob + 8);
    total += amb(knob + 10);
    total += reassigned(knob, knob * 2, knob * 3);
    printf("%d\n", total);
    return 0;
}
