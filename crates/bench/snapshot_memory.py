#!/usr/bin/env python3
"""Memory of a recording's snapshots (issue 30; docs/benchmarks.md): records
samples/c/rev_heap.c with a big heap (`tandem debug --record rev_heap MIB ROUNDS SLEEP`),
each round rewriting an eighth of the heap between system calls, and while the program
sleeps at the end reads /proc/PID/smaps_rollup of tandem's traced children: the live
program (the first child) and every snapshot (copy-on-write forks). Prints each one's
RSS, PSS, shared and private pages, their totals, and the machine's available memory
before and during.

    gcc -O0 -g -o rev_heap samples/c/rev_heap.c
    python3 crates/bench/snapshot_memory.py target/release/tandem ./rev_heap 1024 48
"""

import os
import subprocess
import sys
import time

FIELDS = ["Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty"]


def rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in FIELDS:
                    out[name] = int(rest.split()[0]) // 1024  # MiB
    except OSError:
        return None
    return out


def children(parent):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent:
            found.append((int(fields[19]), int(entry), fields[0]))  # start time, pid, state
    return sorted(found)


def available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def main():
    tandem, program = sys.argv[1], sys.argv[2]
    mib = sys.argv[3] if len(sys.argv) > 3 else "1024"
    rounds = sys.argv[4] if len(sys.argv) > 4 else "48"
    sleep_ms = 6000
    before = available()
    started = time.time()
    p = subprocess.Popen([tandem, "debug", "--record", program, mib, rounds, str(sleep_ms)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    # The rounds take a few seconds recorded; read while the program sleeps at the end.
    best = None
    while p.poll() is None:
        time.sleep(0.25)
        kids = children(p.pid)
        if len(kids) < 2:
            continue
        rows = [(pid, state, rollup(pid)) for _, pid, state in kids]
        rows = [r for r in rows if r[2]]
        total = sum(r[2]["Pss"] for r in rows)
        if best is None or total > best[0]:
            best = (total, rows, available(), time.time() - started)
    out, _ = p.communicate()
    print(f"program output: {out.decode().strip()}  (recorded run {time.time() - started:.1f} s)")
    print(f"available before: {before} MiB")
    if not best:
        print("no snapshot seen")
        return
    total, rows, avail, at = best
    print(f"at {at:.1f} s (peak total PSS), available then: {avail} MiB")
    print("pid      role      " + " ".join(f"{f:>13}" for f in FIELDS) + "   (MiB)")
    sums = {f: 0 for f in FIELDS}
    for i, (pid, state, r) in enumerate(rows):
        role = "live" if i == 0 else "snapshot"
        print(f"{pid:<8} {role:<9} " + " ".join(f"{r.get(f, 0):>13}" for f in FIELDS))
        for f in FIELDS:
            sums[f] += r.get(f, 0)
    print(f"{'total':<18} " + " ".join(f"{sums[f]:>13}" for f in FIELDS))
    print(f"{len(rows) - 1} snapshots")


if __name__ == "__main__":
    main()
