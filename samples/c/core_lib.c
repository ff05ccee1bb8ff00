/* Post-mortem sample (tests/postmortem.rs): a shared library function the program stops
 * in; built twice with different LIB_SCALE so the second build has another build-id. */
#ifndef LIB_SCALE
#define LIB_SCALE 2
#endif
int lib_scale(int v) {
    int scaled = v * LIB_SCALE;
    return scaled + 1;
}
