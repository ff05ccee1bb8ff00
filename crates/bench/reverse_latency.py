#!/usr/bin/env python3
"""Latency of going back in a long recording (issue 30; docs/benchmarks.md): drives
`tandem dap` over stdio on samples/c/rev_bench.c `syscalls N` (two system calls a round,
tick() every 1,000 rounds), recorded, stopped at the last tick; then times, from request
to `stopped`, five `stepBack`s by line and `reverseContinue`s to ticks 1,000, 10,000 and
20,000 rounds back. The recording's own time is measured too (launch to the first stop),
so "N rounds back" reads as seconds of recorded execution.

    gcc -O1 -g -o rev_bench samples/c/rev_bench.c
    python3 crates/bench/reverse_latency.py target/release/tandem ./rev_bench 30000
"""

import json
import subprocess
import sys
import time


class Dap:
    def __init__(self, tandem):
        self.p = subprocess.Popen([tandem, "dap"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.seq = 0
        self.pending = []

    def send(self, command, arguments):
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()
        return self.seq

    def read(self):
        length = 0
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("tandem closed the connection")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def request(self, command, arguments):
        seq = self.send(command, arguments)
        while True:
            m = self.read()
            if m.get("type") == "response" and m.get("request_seq") == seq:
                if not m.get("success"):
                    raise SystemExit(f"{command} failed: {m.get('message')}")
                return m.get("body") or {}
            self.pending.append(m)

    def event(self, name):
        for i, m in enumerate(self.pending):
            if m.get("type") == "event" and m.get("event") == name:
                return self.pending.pop(i)
        while True:
            m = self.read()
            if m.get("type") == "event" and m.get("event") == name:
                return m
            self.pending.append(m)


def main():
    tandem, program, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    source = program.rsplit("/", 1)[0] + "/rev_bench.c" if len(sys.argv) < 5 else sys.argv[4]
    src_text = open(source).read().splitlines()
    tick_line = next(n for n, l in enumerate(src_text, 1) if "g_acc = acc" in l)
    last = rounds - 1
    d = Dap(tandem)
    d.request("initialize", {"adapterID": "bench", "linesStartAt1": True})
    d.request("launch", {"program": program, "args": ["syscalls", str(rounds)],
                         "stdio": "pipes", "reverseDebugging": True})

    def at_tick(i):
        d.request("setBreakpoints", {"source": {"path": source},
                                     "breakpoints": [{"line": tick_line,
                                                      "condition": f"i == {i}"}]})

    at_tick(last)
    started = time.monotonic()
    d.request("configurationDone", {})
    tid = d.event("stopped")["body"]["threadId"]
    recorded = time.monotonic() - started
    print(f"recorded {rounds} rounds ({2 * rounds} system calls) in {recorded:.2f} s "
          f"({recorded / rounds * 1000:.3f} ms a round)")

    def timed(command, arguments):
        t0 = time.monotonic()
        d.request(command, arguments)
        ev = d.event("stopped")
        return time.monotonic() - t0, ev["body"]["threadId"], ev["body"]["reason"]

    for k in range(5):
        dt, tid, reason = timed("stepBack", {"threadId": tid})
        print(f"stepBack {k + 1}: {dt * 1000:.0f} ms ({reason})")
    # Far back too: with system calls buffered inside the program a round records in
    # about a microsecond, so a second of recorded execution is most of a long run.
    for back in sorted({1000, 10000, 20000, rounds // 2 // 1000 * 1000, (rounds - 1001) // 1000 * 1000}):
        target = last - back
        if target < 999:
            continue
        # Forward to the present first (the last tick), so each goes back from there.
        at_tick(last)
        d.request("continue", {"threadId": tid})
        tid = d.event("stopped")["body"]["threadId"]
        at_tick(target)
        dt, tid, reason = timed("reverseContinue", {"threadId": tid})
        print(f"reverseContinue {back} rounds back (≈ {recorded * back / rounds:.2f} s of "
              f"recorded execution): {dt * 1000:.0f} ms ({reason})")
    d.request("disconnect", {"terminateDebuggee": True})


if __name__ == "__main__":
    main()
