#: The gdb side of tandem-bench: one scenario per run, chosen and parameterised through
#: BENCH_* environment variables; figures are printed as `BENCH key value` lines on stdout.
#: Runs inside `gdb -batch -nx -x gdb_bench.py --args PROGRAM ARGS`.

import os
import re
import resource
import time

import gdb


def env(name):
    return os.environ["BENCH_" + name]


def memory():
    """(VmRSS, VmHWM) of this gdb process, in bytes."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(rest.split()[0]) * 1024
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def report(key, value):
    print("BENCH %s %s" % (key, value))


def run_to_stop():
    gdb.execute("run", to_string=True)


def frames(limit):
    """What a DAP stackTrace carries: each frame's function, file and line."""
    out = []
    frame = gdb.newest_frame()
    while frame is not None and len(out) < limit:
        sal = frame.find_sal()
        name = sal.symtab.filename if sal.symtab is not None else None
        out.append((frame.name(), name, sal.line))
        frame = frame.older()
    return out


def p1():
    # A false condition N-1 times, then true once; the time of `run` is the figure.
    gdb.execute("break %s:%s if i == %s" % (env("FILE"), env("LINE"), env("LAST")), to_string=True)
    start = time.monotonic()
    run_to_stop()
    report("elapsed", time.monotonic() - start)
    report("i", int(gdb.parse_and_eval("i")))


def p2():
    # From spawning gdb (the harness's clock, passed as epoch seconds) to the stop.
    gdb.execute("break %s:%s" % (env("FILE"), env("LINE")), to_string=True)
    run_to_stop()
    report("elapsed", time.time() - float(env("T0")))
    rss, peak = memory()
    report("peak", peak)
    report("line", gdb.newest_frame().find_sal().line)


def p3():
    gdb.execute("break %s:%s" % (env("FILE"), env("LINE")), to_string=True)
    run_to_stop()
    gdb.execute("delete", to_string=True)
    times = []
    for _ in range(int(env("STEPS"))):
        start = time.monotonic()
        gdb.execute("next", to_string=True)
        stepped = time.monotonic()
        frames(20)
        times.append("%.9f+%.9f" % (stepped - start, time.monotonic() - stepped))
    report("steps", " ".join(times))


def p5():
    gdb.execute("break %s:%s" % (env("FILE"), env("LINE")), to_string=True)
    run_to_stop()
    before, _ = memory()
    start = time.monotonic()
    gdb.execute("info locals", to_string=True)
    report("locals", time.monotonic() - start)
    first = int(env("START"))
    count = int(env("COUNT"))
    start = time.monotonic()
    page = gdb.execute("print big[%d]@%d" % (first, count), to_string=True)
    report("page", time.monotonic() - start)
    after, _ = memory()
    report("rss_before", before)
    report("rss_after", after)
    report("first", page.split("{", 1)[1].split(",", 1)[0].strip())


def cpu():
    """CPU seconds of gdb and of its waited-for children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def record_from_main():
    # glibc's AVX routines off (gdb 13 cannot record them), then `record full` at main.
    gdb.execute("set environment GLIBC_TUNABLES " + env("TUNABLES"), to_string=True)
    gdb.execute("break main", to_string=True)
    run_to_stop()
    gdb.execute("delete", to_string=True)
    gdb.execute("record full", to_string=True)
    gdb.execute("set record full insn-number-max unlimited", to_string=True)


def unrecordable(out):
    if "does not support instruction" in out or "failed to record" in out:
        raise RuntimeError("record full failed: " + " ".join(out.split()))


def r1():
    # `record full` from main to the program's end (gdb stops before exit_group).
    record_from_main()
    c0, t0 = cpu(), time.monotonic()
    out = gdb.execute("continue", to_string=True)
    report("elapsed", time.monotonic() - t0)
    report("cpu", cpu() - c0)
    unrecordable(out)
    where = gdb.newest_frame().name() or ""
    if "exit" not in where:
        raise RuntimeError("record full stopped in %s, not at the program's exit" % where)
    info = gdb.execute("info record", to_string=True)
    found = re.search(r"Log contains (\d+) instructions", info)
    report("insns", found.group(1) if found else 0)


def i_is(expected):
    got = int(gdb.parse_and_eval("i"))
    if got != expected:
        raise RuntimeError("stopped at i = %d, expected %d" % (got, expected))


def r2():
    # rev_bench syscalls: recorded from main to the last tick, then five reverse-nexts and
    # reverse-continues to earlier ticks, each from the end of the log.
    record_from_main()
    last = int(env("LAST"))
    bp = gdb.Breakpoint("%s:%s" % (env("FILE"), env("LINE")))
    bp.condition = "i == %d" % last
    t0 = time.monotonic()
    out = gdb.execute("continue", to_string=True)
    report("record", time.monotonic() - t0)
    unrecordable(out)
    i_is(last)
    steps = []
    for _ in range(5):
        t0 = time.monotonic()
        gdb.execute("reverse-next", to_string=True)
        steps.append("%.9f" % (time.monotonic() - t0))
    report("steps", " ".join(steps))
    back = []
    for distance in env("BACK").split():
        target = last - int(distance)
        gdb.execute("record goto end", to_string=True)
        bp.condition = "i == %d" % target
        t0 = time.monotonic()
        gdb.execute("reverse-continue", to_string=True)
        back.append("%.9f" % (time.monotonic() - t0))
        i_is(target)
    report("back", " ".join(back))


try:
    {"p1": p1, "p2": p2, "p3": p3, "p5": p5, "r1": r1, "r2": r2}[env("SCENARIO")]()
except Exception as err:  # reported to the harness, which fails the run
    report("error", repr(err))
finally:
    try:
        gdb.execute("kill", to_string=True)
    except gdb.error:
        pass
