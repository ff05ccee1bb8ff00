# The gdb oracle of tests/step_targets.rs: the calls the rest of a source line makes, in
# the order the program makes them, and where gdb's `step` into each one lands.
# Convenience variables: $line (the line), $src (its file name).  Each call is found by
# running the line one instruction at a time from its breakpoint to where gdb's `next`
# stops, stepping over the calls before it; it is named by entering it with `stepi`,
# and, in another run, gdb's own `step` from that call instruction enters exactly that
# call (or steps over it, for a function without line information).  Printed as `ORACLE END line`, `ORACLE CALL k name`, `ORACLE LAND k frames`,
# `ORACLE ARGS k info-args`.
import gdb


def out(*words):
    print("ORACLE", *words, flush=True)


gdb.execute("set confirm off")
gdb.execute("set pagination off")
line = int(gdb.convenience_variable("line"))
src = gdb.convenience_variable("src").string()
gdb.execute("break %s:%d" % (src, line))


def to_line():
    gdb.execute("run", to_string=True)
    return gdb.selected_frame()


home = to_line()
home_name = home.name()
gdb.execute("next", to_string=True)
end_pc = gdb.selected_frame().pc()
end_line = gdb.selected_frame().find_sal().line
out("END", end_line)


def tail_call(insn):
    """A jump to another function (gcc -O2's tail call)."""
    words = insn["asm"].split()
    if len(words) < 2 or words[0] != "jmp" or not words[1].startswith("0x"):
        return False
    block = gdb.block_for_pc(int(words[1], 16))
    return block is not None and block.function is not None and block.function.name != home_name


def to_call(k):
    """Runs the line from its breakpoint to its k-th call instruction (the calls before
    it stepped over); False when the line ends first."""
    frame = to_line()
    arch = frame.architecture()
    seen = 0
    while frame.pc() != end_pc and frame.name() == home_name:
        insn = arch.disassemble(frame.pc())[0]
        jump = tail_call(insn)
        if insn["asm"].startswith("call") or jump:
            if seen == k:
                return True
            if jump:
                return False
            seen += 1
            gdb.execute("tbreak *%d" % (frame.pc() + insn["length"]), to_string=True)
            gdb.execute("continue", to_string=True)
        else:
            gdb.execute("stepi", to_string=True)
        frame = gdb.selected_frame()
    return False


k = 0
while k < 20 and to_call(k):
    gdb.execute("stepi", to_string=True)
    out("CALL", k, gdb.selected_frame().name() or "??")
    # gdb's own step from the call instruction enters exactly this call.
    to_call(k)
    gdb.execute("step", to_string=True)
    f = gdb.selected_frame()
    frames = []
    while f is not None:
        # A frame gdb rebuilt from call-site information (a tail call removed it).
        tail = "(tailcall)" if f.type() == gdb.TAILCALL_FRAME else ""
        frames.append("%s:%d%s" % (f.name(), f.find_sal().line, tail))
        if f.name() == home_name and not tail:
            break
        f = f.older()
    out("LAND", k, " ".join(frames))
    if len(frames) > 1:
        out("ARGS", k, gdb.execute("info args", to_string=True).strip().replace("\n", "; "))
    k += 1
