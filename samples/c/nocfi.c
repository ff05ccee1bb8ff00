/* A leaf written in assembly without CFI and without a frame pointer, called from C:
   the unwinder's fallback for code without unwind rows (as glibc's __clone3 after its
   syscall) must find its caller through the return address at [rsp]. */
__asm__(".text\n"
        ".globl nocfi_leaf\n"
        ".type nocfi_leaf, @function\n"
        "nocfi_leaf:\n"
        "    lea 1(%rdi), %eax\n"
        "    ret\n"
        ".size nocfi_leaf, .-nocfi_leaf\n");

int nocfi_leaf(int x);

int caller_c(int x) {
    int r = nocfi_leaf(x);
    return r * 2;
}

int main(void) {
    return caller_c(20) == 42 ? 0 : 1;
}
