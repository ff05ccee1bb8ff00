"""The agent and the editor on one session: a real `tandem lsp` (initialized with a
workspace root) serves the workspace socket; a DAP client (`tandem dap` on stdio, which
relays to that socket) launches samples/c/mcp_demo.c and is paused at a breakpoint; then
`tandem mcp`, started in the same workspace, relays to the same language server, and the
official MCP Python SDK drives it: debug_sessions lists the editor's session,
debug_stack/debug_variables/debug_evaluate read the values the DAP client reads, and
debug_breakpoints + debug_continue by the agent make the DAP client see `continued` and
then `stopped` at the agent's breakpoint. The editor's own breakpoint (same file, named by
its absolute path) survives the agent's, and debug_end lets go of the session without
ending it."""

from __future__ import annotations

import json
import os
import pathlib
import queue
import shutil
import subprocess
import tempfile
import threading
import time

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from test_mcp import SAMPLE, TANDEM, call, local, mark


class Framed:
    """A Content-Length peer (LSP or DAP) on a subprocess's stdio; a thread reads every
    message into a queue."""

    def __init__(self, args: list[str], cwd: pathlib.Path, env: dict[str, str]):
        self.proc = subprocess.Popen([TANDEM, *args], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        self.seq = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            body = out.read(length)
            if len(body) < length:
                # Killed at the end of the test (`close`) between a frame's header and
                # its body: nothing is left to read.
                return
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def next(self, what: str, matches, timeout: float = 20.0) -> dict:
        """The first message (seen or to come) that `matches`, consumed."""
        for i, m in enumerate(self.seen):
            if matches(m):
                return self.seen.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no {what} within {timeout}s; seen: {self.seen}"
            try:
                m = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if matches(m):
                return m
            self.seen.append(m)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Dap(Framed):
    def request(self, command: str, arguments: dict | None = None) -> dict:
        self.seq += 1
        seq = self.seq
        self.send({"seq": seq, "type": "request", "command": command, "arguments": arguments or {}})
        r = self.next(f"response to {command}",
                      lambda m: m.get("type") == "response" and m.get("request_seq") == seq)
        assert r["success"], r
        return r.get("body") or {}

    def event(self, name: str, timeout: float = 20.0) -> dict:
        return self.next(f"event {name}", lambda m: m.get("type") == "event" and m["event"] == name,
                         timeout)

    def events_now(self) -> list[dict]:
        """Every event that arrived so far, in order (consumed)."""
        while True:
            try:
                self.seen.append(self.messages.get_nowait())
            except queue.Empty:
                break
        events = [m for m in self.seen if m.get("type") == "event"]
        self.seen = [m for m in self.seen if m.get("type") != "event"]
        return events

    def events_until(self, name: str) -> list[str]:
        """The names of the events that arrive, in order, up to the first `name`."""
        names = [e["event"] for e in self.events_now()]
        while name not in names:
            m = self.next("an event", lambda m: m.get("type") == "event")
            names.append(m["event"])
        return names

    def top(self, tid: int) -> dict:
        return self.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 20})["stackFrames"][0]

    def locals(self, frame: int) -> dict[str, str]:
        scopes = self.request("scopes", {"frameId": frame})["scopes"]
        shown = {}
        for scope in scopes:
            if scope["name"] in ("Locals", "Arguments"):
                for v in self.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    shown[v["name"]] = v["value"]
        return shown


def agent_params(root: pathlib.Path, env: dict[str, str]) -> StdioServerParameters:
    """`tandem mcp` started in the workspace, which relays to its language server."""
    mcp_env = {k: v for k, v in env.items() if k in ("PATH", "HOME", "XDG_RUNTIME_DIR")}
    return StdioServerParameters(command=TANDEM, args=["mcp"], cwd=str(root), env=mcp_env)


@pytest.fixture
def shared(tmp_path):
    """A workspace with the sample, a private socket directory, and a `tandem lsp` serving
    the workspace (initialized with its root)."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(SAMPLE, root / "mcp_demo.c")
    subprocess.run(["gcc", "-g", "-O0", "-o", str(root / "mcp_demo"), str(root / "mcp_demo.c")],
                   check=True)
    runtime = pathlib.Path(tempfile.mkdtemp(prefix="tandem-rt-"))
    os.chmod(runtime, 0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    lsp = Framed(["lsp"], root, env)
    lsp.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}})
    lsp.next("initialize's answer", lambda m: m.get("id") == 1)
    lsp.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    deadline = time.monotonic() + 10
    while not list((runtime / "tandem").glob("dap-*.sock")):
        assert time.monotonic() < deadline, "the language server opened no workspace socket"
        time.sleep(0.05)
    yield root, env, lsp
    lsp.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    lsp.send({"jsonrpc": "2.0", "method": "exit"})
    try:
        lsp.proc.wait(timeout=10)
    finally:
        lsp.stop()
        shutil.rmtree(runtime, ignore_errors=True)


async def test_the_agent_reads_and_drives_the_editors_session(shared):
    root, env, lsp = shared
    src = root / "mcp_demo.c"
    loop, add = mark("loop"), mark("add")

    # The editor: `tandem dap` relays to the language server, launches, stops at `loop`.
    dap = Dap(["dap"], root, env)
    try:
        dap.request("initialize", {"adapterID": "tandem", "linesStartAt1": True,
                                   "columnsStartAt1": True, "pathFormat": "path"})
        dap.request("launch", {"program": str(root / "mcp_demo")})
        bps = dap.request("setBreakpoints", {"source": {"path": str(src)},
                                             "breakpoints": [{"line": loop}]})
        assert bps["breakpoints"][0]["verified"], bps
        dap.request("configurationDone")
        stop = dap.event("stopped")
        tid = stop["body"]["threadId"]
        pid = dap.event("process")["body"]["systemProcessId"]
        top = dap.top(tid)
        assert top["line"] == loop and top["name"].startswith("main"), top
        dap_locals = dap.locals(top["id"])
        dap_sum = dap.request("evaluate", {"expression": "pt.x + pt.y * 10 + i",
                                           "frameId": top["id"], "context": "watch"})["result"]

        # The agent: `tandem mcp` in the same workspace relays to the same language server.
        params = agent_params(root, env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                listed = (await call(s, "debug_sessions"))["sessions"]
                assert len(listed) == 1, listed
                shared_session = listed[0]
                sid = shared_session["session"]
                assert shared_session["pid"] == pid and shared_session["own"] is False
                assert shared_session["state"] == "stopped" and shared_session["origin"] == "launched"
                assert shared_session["program"].endswith("mcp_demo")

                stack = await call(s, "debug_stack", session=sid)
                assert stack["frames"][0]["function"] == "main"
                assert stack["frames"][0]["line"] == top["line"] == loop
                v = await call(s, "debug_variables", session=sid)
                agent_locals = {x["name"]: x["value"] for x in v["variables"]}
                for name in ("pt", "i", "total", "mode"):
                    assert agent_locals[name] == dap_locals[name], (name, agent_locals, dap_locals)
                assert agent_locals["pt"] == "{x = 3, y = 4}" and agent_locals["i"] == "0"
                ev = await call(s, "debug_evaluate", session=sid, expression="pt.x + pt.y * 10 + i")
                assert ev["value"] == dap_sum == "43"

                # The agent's breakpoint, in the file the editor has one in too.
                bps = await call(s, "debug_breakpoints", session=sid,
                                 set=[{"location": f"mcp_demo.c:{add}"}])
                assert bps["breakpoints"][0]["verified"] and bps["breakpoints"][0]["line"] == add
                dap.events_now()
                st = await call(s, "debug_continue", session=sid)
                assert st["state"] == "stopped" and st["reason"] == "breakpoint", st
                assert st["function"] == "add" and st["line"] == add
                assert local(st, "b")["value"] == "3"
                # The editor saw the agent's run: continued, then stopped where the agent is.
                names = [n for n in dap.events_until("stopped") if n in ("continued", "stopped")]
                assert names == ["continued", "stopped"], names
                top = dap.top(tid)
                assert top["name"].startswith("add") and top["line"] == add, top
                assert dap.locals(top["id"])["b"] == "3"

                # The editor continues: its own breakpoint (same file) still stops at `loop`.
                dap.request("continue", {"threadId": tid})
                dap.events_until("stopped")
                top = dap.top(tid)
                assert top["line"] == loop, top
                # The agent sees the editor's stop, and continues from it (i = 1) into its
                # own breakpoint in add.
                stack = await call(s, "debug_stack", session=sid)
                assert stack["frames"][0]["line"] == loop
                st = await call(s, "debug_continue", session=sid)
                assert st["state"] == "stopped" and st["function"] == "add"
                assert local(st, "b")["value"] == "4"
                names = [n for n in dap.events_until("stopped") if n in ("continued", "stopped")]
                assert names == ["continued", "stopped"], names

                # debug_end of the editor's session: the agent lets go, removing its
                # breakpoint; the session goes on.
                end = await call(s, "debug_end", session=sid)
                assert "note" in end and end["state"] == "stopped", end
                listed = (await call(s, "debug_sessions"))["sessions"]
                assert [x["session"] for x in listed] == [sid]
            # The agent is gone: the editor's session is not.
            dap.request("continue", {"threadId": tid})
            dap.event("stopped")
            top = dap.top(tid)
            assert top["line"] == loop, "the agent's breakpoint in add was removed"
            assert dap.locals(top["id"])["i"] == "2"
        dap.request("setBreakpoints", {"source": {"path": str(src)}, "breakpoints": []})
        dap.request("continue", {"threadId": tid})
        assert dap.event("exited")["body"]["exitCode"] == 3
        dap.request("disconnect", {})
        print(f"[shared] the DAP session (pid {pid}) listed by the agent, same stack, locals and "
              f"evaluate ({dap_sum}); the agent's breakpoint at {add} and debug_continue gave the "
              "editor continued + stopped there; the editor's breakpoint survived; debug_end let go")
    finally:
        dap.stop()


async def test_child_sessions_are_listed_with_their_parent(shared):
    """The editor debugs a forking program with a session per child (startDebugging
    answered as VS Code does, the child's `tandem dap` relaying to the same language
    server): debug_sessions lists the child's session with the parent's as its parent."""
    root, env, lsp = shared
    forks = pathlib.Path(SAMPLE).parent / "forks.c"
    shutil.copy(forks, root / "forks.c")
    subprocess.run(["gcc", "-g", "-O0", "-o", str(root / "forks"), str(root / "forks.c")], check=True)
    job = next(n for n, l in enumerate((root / "forks.c").read_text().splitlines(), 1) if "S:job" in l)
    caps = {"adapterID": "tandem", "linesStartAt1": True, "columnsStartAt1": True,
            "pathFormat": "path", "supportsStartDebuggingRequest": True}
    dap = Dap(["dap"], root, env)
    children: list[Dap] = []
    try:
        dap.request("initialize", caps)
        dap.request("launch", {"type": "tandem", "program": str(root / "forks"), "args": ["prefork"],
                               "stdio": "pipes"})
        dap.request("configurationDone")
        parent_pid = dap.event("process")["body"]["systemProcessId"]
        ask = dap.next("startDebugging", lambda m: m.get("type") == "request"
                       and m.get("command") == "startDebugging")
        dap.send({"seq": 0, "type": "response", "request_seq": ask["seq"], "command": "startDebugging",
                  "success": True, "body": {}})
        config = ask["arguments"]["configuration"]
        child = Dap(["dap"], root, env)
        children.append(child)
        child.request("initialize", caps)
        child.request("attach", config)
        child.request("setBreakpoints", {"source": {"path": str(root / "forks.c")},
                                         "breakpoints": [{"line": job}]})
        child.request("configurationDone")
        stop = child.event("stopped")
        assert stop["body"]["reason"] == "breakpoint", stop

        params = agent_params(root, env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                listed = (await call(s, "debug_sessions"))["sessions"]
        by_pid = {x["pid"]: x for x in listed}
        assert parent_pid in by_pid and config["pid"] in by_pid, listed
        assert by_pid[config["pid"]]["parent"] == by_pid[parent_pid]["session"], listed
        assert by_pid[parent_pid]["parent"] is None, listed
        assert by_pid[config["pid"]]["state"] == "stopped", listed

        # The rest runs without sessions: the other two children are refused.
        child.request("continue", {"threadId": stop["body"]["threadId"]})
        child.event("exited")
        for _ in range(2):
            ask = dap.next("startDebugging", lambda m: m.get("type") == "request"
                           and m.get("command") == "startDebugging")
            dap.send({"seq": 0, "type": "response", "request_seq": ask["seq"],
                      "command": "startDebugging", "success": False, "message": "refused"})
        assert dap.event("exited")["body"]["exitCode"] == 0
        print(f"[shared] child session of pid {config['pid']} listed with parent session "
              f"{by_pid[parent_pid]['session']} (pid {parent_pid})")
    finally:
        for c in children:
            c.stop()
        dap.stop()
