#: The gdb side of tandem-bench: one scenario per run, chosen and parameterised through
#: BENCH_* environment variables; figures are printed as `BENCH key value` lines on stdout.
#: Runs inside `gdb -batch -nx -x gdb_bench.py --args PROGRAM ARGS`.

import os
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


try:
    {"p1": p1, "p2": p2, "p3": p3, "p5": p5}[env("SCENARIO")]()
except Exception as err:  # reported to the harness, which fails the run
    report("error", repr(err))
finally:
    try:
        gdb.execute("kill", to_string=True)
    except gdb.error:
        pass
