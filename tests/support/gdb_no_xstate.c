/* Runs a command (gdb, for the `record full` oracle of the reverse suites) with ptrace's
 * NT_X86_XSTATE register set refused, as on a CPU without XSAVE (ENODEV, the kernel's
 * answer there), so gdb reads and writes the x87/SSE registers through
 * PTRACE_GETFPREGS/PTRACE_SETFPREGS (the 512-byte FXSAVE area) instead.
 *
 * Why: gdb 13 writes the extended state with PTRACE_SETREGSET NT_X86_XSTATE from a
 * buffer of its fixed X86_XSTATE_MAX_SIZE (2696 bytes: x87, SSE, AVX, MPX, AVX-512,
 * PKRU), and the kernel takes such a write only at its full XSAVE size (11008 bytes on a
 * CPU with AMX, whose TILEDATA alone is 8 KiB); any other size is refused with EFAULT.
 * So going back over an instruction that wrote an SSE or x87 register (glibc's string
 * functions, `-O2` code moving 16 bytes through %xmm0), where `record full` restores
 * that register, fails with "Couldn't write extended state status: Bad address." and
 * gdb is left unable to go on. Through the legacy FXSAVE requests every register gdb
 * restores (general, x87, SSE, %mxcsr) is written whole; only the AVX upper halves and
 * AVX-512 registers are out of gdb's view, which the oracle never reads (glibc's AVX
 * routines are off under `record full` anyway: gdb 13 cannot record them).
 *
 * The filter is inherited by the program gdb starts; it only ever answers ptrace calls,
 * which the programs under test do not make.
 *
 * Usage: gdb_no_xstate COMMAND [ARG...]. Exits 125 when the filter cannot be installed
 * (the caller then says so and runs gdb as it is), 127 when COMMAND cannot be run. */
#include <elf.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARG_LOW(n) (offsetof(struct seccomp_data, args[n]))

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
        return 127;
    }
    struct sock_filter filter[] = {
        /* Only x86-64 system calls are looked at. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* ptrace(PTRACE_GETREGSET or PTRACE_SETREGSET, tid, NT_X86_XSTATE, iov). */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(2)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NT_X86_XSTATE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_GETREGSET, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_SETREGSET, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENODEV),
    };
    struct sock_fprog prog = {
        .len = sizeof filter / sizeof filter[0],
        .filter = filter,
    };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("gdb_no_xstate: cannot install the seccomp filter");
        return 125;
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
