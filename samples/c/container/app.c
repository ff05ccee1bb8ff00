// container/app.c: a service for the container tests. It runs forever (until killed),
// calling into libcontainer_lib.so, which calls `on_tick` back; tests attach from
// outside the namespaces and stop at the LINE_* markers.
#include <stdio.h>
#include <unistd.h>

struct tick {
    int count;
    double scale;
};

int lib_apply(int (*callback)(struct tick *), struct tick *t);

static int total;

static int on_tick(struct tick *t) {
    int doubled = t->count * 2;
    total += doubled; // LINE_ON_TICK
    return doubled;
}

int main(void) {
    struct tick t = {0, 1.5};
    for (;;) {
        t.count++;
        lib_apply(on_tick, &t);
        usleep(2000);
    }
    return 0;
}
