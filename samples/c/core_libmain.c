/* Post-mortem sample (tests/postmortem.rs): calls into core_lib.c's shared library. */
int lib_scale(int v);

int main(void) {
    int start = 20;
    return lib_scale(start) == 0;
}
