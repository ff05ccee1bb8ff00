// container/lib.c: the shared library of the container tests, present only inside the
// test's mount namespace. Frames through `lib_apply` must be symbolized from it.
struct tick;

int lib_apply(int (*callback)(struct tick *), struct tick *t) {
    int result = callback(t); // LINE_LIB_CALL
    return result + 1;
}
