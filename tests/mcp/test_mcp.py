"""`tandem mcp` driven by the official MCP Python SDK (PyPI `mcp`), over stdio and over
Streamable HTTP, for every tool: a real program (samples/c/mcp_demo.c, compiled here with
gcc -g -O0) is launched, stopped, stepped, read, crashed and attached to; gdb is the
oracle for a value. Bad input must give a tool error or a JSON-RPC error, never a hang
or an exit. Each test prints what it checked (`-s` shows it)."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
TANDEM = os.environ.get("TANDEM_BIN") or str(REPO / "target" / "debug" / "tandem")
SAMPLE = REPO / "samples" / "c" / "mcp_demo.c"
REV_SAMPLE = REPO / "samples" / "c" / "rev_watch.c"
TOOLS = {
    "debug_launch", "debug_attach", "debug_continue", "debug_step", "debug_pause",
    "debug_step_back", "debug_reverse_continue", "debug_last_write",
    "debug_breakpoints", "debug_stack", "debug_variables", "debug_evaluate", "debug_output",
    "debug_end", "debug_sessions", "code_symbols", "code_definition", "code_hover",
    "code_diagnostics",
}
TRANSPORTS = ["stdio", "http"]


def rev_line(marker: str) -> int:
    """The line of samples/c/rev_watch.c that holds `marker`."""
    for number, line in enumerate(REV_SAMPLE.read_text().splitlines(), 1):
        if marker in line:
            return number
    raise AssertionError(f"no {marker!r} in {REV_SAMPLE}")


def mark(name: str) -> int:
    """The line of the `MARK:name` comment in the sample."""
    for number, line in enumerate(SAMPLE.read_text().splitlines(), 1):
        if f"MARK:{name}" in line:
            return number
    raise AssertionError(f"no MARK:{name}")


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> pathlib.Path:
    """A workspace root holding the sample and its binary (what code_* index)."""
    root = tmp_path_factory.mktemp("mcp-ws")
    shutil.copy(SAMPLE, root / "mcp_demo.c")
    subprocess.run(["gcc", "-g", "-O0", "-o", str(root / "mcp_demo"), str(root / "mcp_demo.c")],
                   check=True)
    return root


def start_http(root: pathlib.Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([TANDEM, "mcp", "--listen", "127.0.0.1:0", "--root", str(root), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"listening on (http://\S+)", line)
    assert found, f"no listening line: {line!r}"
    return proc, found.group(1)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.asynccontextmanager
async def connect(transport: str, root: pathlib.Path):
    if transport == "stdio":
        params = StdioServerParameters(command=TANDEM, args=["mcp", "--root", str(root)], cwd=str(root))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        proc, url = start_http(root)
        try:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        finally:
            stop(proc)


async def call(session: ClientSession, name: str, /, **arguments):
    """A successful tool call's structured result (checked equal to its text content)."""
    result = await session.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name} failed: {text}"
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def tool_error(session: ClientSession, name: str, /, **arguments) -> str:
    result = await session.call_tool(name, arguments)
    assert result.is_error, f"{name} should have failed: {result.structured_content}"
    return result.content[0].text


def local(state: dict, name: str) -> dict:
    found = [v for v in state["locals"] if v["name"] == name]
    assert found, f"no local {name} in {state['locals']}"
    return found[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_are_listed_with_schemas(transport, workspace):
    async with connect(transport, workspace) as s:
        listed = (await s.list_tools()).tools
        names = {t.name for t in listed}
        assert names == TOOLS
        for t in listed:
            assert t.input_schema["type"] == "object", t.name
            assert t.description
        await s.send_ping()
        print(f"[{transport}] {len(names)} tools listed with object input schemas; ping answered")


def gdb_print(program: pathlib.Path, line: int, expression: str) -> str:
    out = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", f"break mcp_demo.c:{line}", "-ex", "run",
         "-ex", f"print {expression}", str(program)],
        capture_output=True, text=True, timeout=60).stdout
    found = re.findall(r"^\$1 = (.*)$", out, re.M)
    assert found, out
    return found[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_breakpoint_step_evaluate_variables_output_end(transport, workspace):
    program = workspace / "mcp_demo"
    loop, add = mark("loop"), mark("add")
    async with connect(transport, workspace) as s:
        st = await call(s, "debug_launch", program=str(program), cwd=str(workspace),
                        breakpoints=[{"location": f"mcp_demo.c:{loop}"}])
        sid = st["session"]
        assert st["state"] == "stopped" and st["reason"] == "breakpoint", st
        assert st["breakpoints"][0]["verified"] and st["breakpoints"][0]["line"] == loop
        assert st["line"] == loop and st["function"] == "main"
        assert st["frames"][0]["function"] == "main" and st["frames"][0]["line"] == loop
        oracle = gdb_print(program, loop, "pt")
        assert local(st, "pt")["value"] == oracle == "{x = 3, y = 4}"
        assert local(st, "i")["value"] == "0"
        # Written before the stop: there at the stop.
        early = (await call(s, "debug_output", session=sid))["output"]
        assert "hello from mcp_demo" in early and "to stderr" in early, early

        st = await call(s, "debug_step", session=sid, kind="in")
        assert st["state"] == "stopped" and st["reason"] == "step"
        assert st["function"] == "add" and st["line"] == add
        assert local(st, "a")["value"] == "0" and local(st, "b")["value"] == "3"

        stack = await call(s, "debug_stack", session=sid)
        assert [f["function"] for f in stack["frames"][:2]] == ["add", "main"]
        assert stack["frames"][1]["line"] == loop

        ev = await call(s, "debug_evaluate", session=sid, expression="a + b")
        assert ev["value"] == "3" and ev["type"] == "int"
        ev = await call(s, "debug_evaluate", session=sid, expression="values[7] + pt.y", frame=1)
        assert ev["value"] == "53"

        v = await call(s, "debug_variables", session=sid, frame=1, path="pt")
        assert {c["name"]: c["value"] for c in v["variables"]} == {"x": "3", "y": "4"}
        v = await call(s, "debug_variables", session=sid, frame=1, path="values")
        assert v["value"]["children"] == 100 and v["omitted"] == 100 - len(v["variables"])
        assert v["variables"][10] == {"name": "[10]", "value": "100", "type": "int"}
        v = await call(s, "debug_variables", session=sid)
        assert {c["name"] for c in v["variables"]} >= {"a", "b", "sum"}

        st = await call(s, "debug_step", session=sid, kind="out")
        assert st["state"] == "stopped" and st["function"] == "main"
        st = await call(s, "debug_step", session=sid, kind="over")
        assert st["state"] == "stopped" and st["line"] > loop

        bps = await call(s, "debug_breakpoints", session=sid, set=[])
        assert bps["breakpoints"] == []
        st = await call(s, "debug_continue", session=sid)
        assert st == {"session": sid, "state": "exited", "exit_code": 3}

        out = (await call(s, "debug_output", session=sid))["output"]
        assert "hello from mcp_demo" in out and "to stderr" in out and "total 12 values 9801" in out
        listed = (await call(s, "debug_sessions"))["sessions"]
        assert [x["state"] for x in listed if x["session"] == sid] == ["exited"]
        await call(s, "debug_end", session=sid)
        assert all(x["session"] != sid for x in (await call(s, "debug_sessions"))["sessions"])
        print(f"[{transport}] breakpoint at {loop} (pt = {oracle}, as gdb), step in/out/over, "
              "stack, evaluate, variables by path, exit code 3, output, end")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_step_into_the_call_named_by_target(transport, workspace, tmp_path):
    """debug_step with 'target' enters that call of the line: the second of two calls of
    `twice` on one line gets the argument gdb computes for it; a call the line does not
    make is a tool error listing the calls it does make."""
    source = REPO / "samples" / "c" / "step_targets.c"
    program = tmp_path / "step_targets"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(program), str(source)], check=True)
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1)
                if "/* TWICE */" in text)
    out = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", f"break step_targets.c:{line}", "-ex", "run",
         "-ex", "print argc + 1", str(program)],
        capture_output=True, text=True, timeout=60).stdout
    second = re.findall(r"^\$1 = (.*)$", out, re.M)
    assert second, out
    async with connect(transport, workspace) as s:
        st = await call(s, "debug_launch", program=str(program),
                        breakpoints=[{"location": f"step_targets.c:{line}"}])
        sid = st["session"]
        assert st["state"] == "stopped" and st["line"] == line, st
        message = await tool_error(s, "debug_step", session=sid, kind="in", target="nosuch")
        assert "no call to 'nosuch'" in message and "twice #2" in message, message
        message = await tool_error(s, "debug_step", session=sid, kind="in", target="twice",
                                   target_index=3)
        assert "2 time(s)" in message, message
        st = await call(s, "debug_step", session=sid, kind="in", target="twice",
                        target_index=2)
        assert st["state"] == "stopped" and st["function"] == "twice", st
        assert local(st, "x")["value"] == second[0], st
        stack = await call(s, "debug_stack", session=sid)
        assert [f["function"] for f in stack["frames"][:2]] == ["twice", "main"]
        assert stack["frames"][1]["line"] == line
        await call(s, "debug_end", session=sid)
    print(f"{transport}: debug_step target=twice target_index=2 entered twice(x={second[0]})")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_sleeping_program_returns_running_within_wait_ms(transport, workspace):
    async with connect(transport, workspace) as s:
        t0 = time.monotonic()
        st = await call(s, "debug_launch", program=str(workspace / "mcp_demo"), args=["sleep"],
                        wait_ms=400)
        took = time.monotonic() - t0
        sid = st["session"]
        assert st["state"] == "running" and took < 5, (st, took)
        t0 = time.monotonic()
        st = await call(s, "debug_continue", session=sid, wait_ms=300)
        assert st["state"] == "running" and time.monotonic() - t0 < 3
        listed = (await call(s, "debug_sessions"))["sessions"]
        assert [x["state"] for x in listed if x["session"] == sid] == ["running"]
        st = await call(s, "debug_pause", session=sid)
        assert st["state"] == "stopped" and st["reason"] == "pause", st
        assert any(f.get("function") == "main" for f in st["frames"])
        await call(s, "debug_breakpoints", session=sid, set=[{"location": "add"}])
        st = await call(s, "debug_end", session=sid)
        assert st["state"] == "exited"
        print(f"[{transport}] sleeping program: running after {took:.2f}s (wait_ms 400), "
              "pause → stopped in main, end")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_crash_stops_with_signal_address_and_line(transport, workspace):
    async with connect(transport, workspace) as s:
        st = await call(s, "debug_launch", program=str(workspace / "mcp_demo"), args=["crash"])
        assert st["state"] == "stopped" and st["reason"] == "signal", st
        assert st["signal"] == "SIGSEGV" and st["fault_address"] == "0x0"
        assert st["function"] == "crash" and st["line"] == mark("crash")
        assert local(st, "p")["value"] == "0x0"
        st = await call(s, "debug_continue", session=st["session"])
        assert st["state"] == "exited" and st["signal"] == "SIGSEGV" and st["exit_code"] == 128 + 11
        print(f"[{transport}] crash: SIGSEGV at 0x0 in crash() line {mark('crash')}, "
              "then killed by it")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_logpoints_and_conditions(transport, workspace):
    loop = mark("loop")
    async with connect(transport, workspace) as s:
        st = await call(s, "debug_launch", program=str(workspace / "mcp_demo"), breakpoints=[
            {"location": f"mcp_demo.c:{loop}", "log": "i is {i}"},
            {"location": "add", "condition": "b == 5"}])
        assert st["state"] == "stopped" and st["function"] == "add"
        assert local(st, "b")["value"] == "5"
        st = await call(s, "debug_breakpoints", session=st["session"], set=[])
        st = await call(s, "debug_continue", session=st["session"])
        assert st["exit_code"] == 3
        out = (await call(s, "debug_output", session=st["session"]))["output"]
        assert "i is 0" in out and "i is 2" in out
        print(f"[{transport}] logpoint messages in debug_output; condition b == 5 stopped in add")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_attach(transport, workspace):
    target = subprocess.Popen([str(workspace / "mcp_demo"), "sleep"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        async with connect(transport, workspace) as s:
            st = await call(s, "debug_attach", pid=target.pid, wait_ms=200)
            assert st["state"] == "running", st
            st = await call(s, "debug_pause", session=st["session"])
            assert st["state"] == "stopped"
            assert any(f.get("function") == "main" for f in st["frames"])
            await call(s, "debug_end", session=st["session"])
        time.sleep(0.2)
        assert target.poll() is None, "an attached program keeps running after debug_end"
        print(f"[{transport}] attached to pid {target.pid}: running, paused in main, detached alive")
    finally:
        target.kill()
        target.wait()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_code_tools(transport, workspace):
    loop = mark("loop")
    line_text = SAMPLE.read_text().splitlines()[loop - 1]
    async with connect(transport, workspace) as s:
        found = await call(s, "code_symbols", query="add")
        add = [x for x in found["symbols"] if x["name"] == "add"]
        assert add and add[0]["kind"] == "function" and add[0]["file"].endswith("mcp_demo.c")
        d = await call(s, "code_definition", file="mcp_demo.c", line=loop,
                       column=line_text.index("add(") + 1)
        assert d["found"] and d["line"] == add[0]["line"] and d["file"].endswith("mcp_demo.c")
        h = await call(s, "code_hover", file="mcp_demo.c", line=loop,
                       column=line_text.index("pt.x") + 1)
        assert h["found"] and "struct point" in h["text"]
        clean = await call(s, "code_diagnostics", file="mcp_demo.c")
        assert clean["errors"] == 0, clean
        draft = await call(s, "code_diagnostics", file="mcp_demo.c",
                           text="int main(void) {\n  return missing;\n}\n")
        assert draft["errors"] >= 1 and draft["diagnostics"][0]["line"] == 2
        assert "missing" in draft["diagnostics"][0]["message"]
        assert "cargo check" in await tool_error(s, "code_diagnostics", file="src/main.rs", text="fn main(){}")
        print(f"[{transport}] code_symbols add, definition at line {d['line']}, hover struct point, "
              "diagnostics of the file (clean) and of a draft (error on line 2)")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_bad_input_gives_errors_never_a_hang(transport, workspace):
    async with connect(transport, workspace) as s:
        assert "no session 99" in await tool_error(s, "debug_continue", session=99)
        assert "no session 99" in await tool_error(s, "debug_stack", session=99)
        assert "required" in await tool_error(s, "debug_launch")
        assert "cannot launch" in await tool_error(s, "debug_launch", program="/nonexistent/prog")
        st = await call(s, "debug_launch", program=str(workspace / "mcp_demo"), stop_on_entry=True,
                        breakpoints=[{"location": "nosuch.c:5"}, {"location": "mcp_demo.c:abc"},
                                     {"location": "no_such_function"}])
        assert st["state"] == "stopped" and st["reason"] == "entry"
        assert [b["verified"] for b in st["breakpoints"]] == [False, False, False]
        assert all(b.get("message") for b in st["breakpoints"])
        sid = st["session"]
        assert "over, in or out" in await tool_error(s, "debug_step", session=sid, kind="sideways")
        await tool_error(s, "debug_evaluate", session=sid, expression="no_such_name")
        assert "no frame 500" in await tool_error(s, "debug_variables", session=sid, frame=500)
        with pytest.raises(MCPError) as err:
            await s.call_tool("no_such_tool", {})
        assert err.value.error.code == -32602
        await call(s, "debug_end", session=sid)
        await s.send_ping()
        print(f"[{transport}] unknown session, missing/bad arguments, bad locations, bad frame: tool "
              "errors; unknown tool: JSON-RPC -32602; the server still answers")


def test_malformed_json_over_stdio(workspace):
    proc = subprocess.Popen([TANDEM, "mcp", "--root", str(workspace)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdin and proc.stdout
        for line in ['{bad json', '[1, 2]', '{"jsonrpc": "2.0", "id": 1, "method": "nope/nope"}',
                     '{"jsonrpc": "2.0", "id": 2, "method": "ping"}']:
            proc.stdin.write(line + "\n")
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(4)]
        assert answers[0]["error"]["code"] == -32700 and answers[0]["id"] is None
        assert answers[1]["error"]["code"] == -32600
        assert answers[2]["error"]["code"] == -32601 and answers[2]["id"] == 1
        assert answers[3] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        print("[stdio] malformed JSON -32700, batch -32600, unknown method -32601, then ping; "
              "end of input exits 0")
    finally:
        if proc.poll() is None:
            proc.kill()


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_malformed_json_origin_and_token_over_http(workspace):
    proc, url = start_http(workspace)
    try:
        status, body = post(url, b"{bad json")
        assert status == 200 and json.loads(body)["error"]["code"] == -32700
        status, body = post(url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert status == 202 and body == b""
        status, _ = post(url, b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                         {"Origin": "https://evil.example"})
        assert status == 403
        status, body = post(url, b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert status == 200 and json.loads(body)["result"] == {}
    finally:
        stop(proc)
    proc, url = start_http(workspace, "--token", "s3cret")
    try:
        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        assert post(url, ping)[0] == 401
        assert post(url, ping, {"Authorization": "Bearer wrong"})[0] == 401
        status, body = post(url, ping, {"Authorization": "Bearer s3cret"})
        assert status == 200 and json.loads(body)["id"] == 1
    finally:
        stop(proc)
    refused = subprocess.run([TANDEM, "mcp", "--listen", "0.0.0.0:0"], capture_output=True,
                             text=True, timeout=10)
    assert refused.returncode != 0 and "--token" in refused.stderr
    print("[http] malformed JSON -32700, notification 202, foreign Origin 403, token required "
          "(401 without or wrong, 200 with), non-loopback without a token refused")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_going_back_in_a_recorded_session(transport, workspace):
    """debug_launch with record: true, then debug_last_write (the write gdb's reverse
    watchpoint finds: tests/reverse_watch.rs checks it against gdb), debug_reverse_continue
    to the earlier breakpoint hit with its values, and debug_step_back by line and by
    instruction; without a recording the reverse tools say why."""
    shutil.copy(REV_SAMPLE, workspace / "rev_watch.c")
    program = workspace / "rev_watch"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(program), str(workspace / "rev_watch.c")],
                   check=True)
    add, done = rev_line("add line"), rev_line("done line")
    async with connect(transport, workspace) as s:
        st = await call(s, "debug_launch", program=str(program), record=True,
                        breakpoints=[{"location": f"rev_watch.c:{add}", "condition": "v == 12"},
                                     {"location": f"rev_watch.c:{done}"}])
        sid = st["session"]
        assert st["state"] == "stopped" and st["line"] == add, st
        assert local(st, "v")["value"] == "12"
        st = await call(s, "debug_continue", session=sid)
        assert st["state"] == "stopped" and st["line"] == done, st

        st = await call(s, "debug_last_write", session=sid, expression="g_total")
        assert st["state"] == "stopped" and st["reason"] == "data breakpoint", st
        assert st["line"] == rev_line("double line") and st["function"] == "main", st
        assert "g_total: 45 → 90" in st["description"], st
        ev = await call(s, "debug_evaluate", session=sid, expression="g_total")
        assert ev["value"] == "45"

        st = await call(s, "debug_reverse_continue", session=sid)
        assert st["state"] == "stopped" and st["reason"] == "breakpoint", st
        assert st["function"] == "add" and local(st, "v")["value"] == "12", st
        ev = await call(s, "debug_evaluate", session=sid, expression="g_total")
        assert ev["value"] == "18", "the value at that hit, as it was"

        st = await call(s, "debug_step_back", session=sid)
        assert st["state"] == "stopped" and st["reason"] == "step", st
        assert st["function"] == "main" and st["line"] == rev_line("add(i * 3);"), st
        assert local(st, "i")["value"] == "4"
        st = await call(s, "debug_step_back", session=sid, kind="instruction")
        assert st["state"] == "stopped" and st["reason"] == "step", st

        err = await tool_error(s, "debug_last_write", session=sid, expression="g_total + 1")
        assert "not in memory" in err, err
        err = await tool_error(s, "debug_step_back", session=sid, kind="sideways")
        assert "line or instruction" in err, err
        await call(s, "debug_end", session=sid)

        st = await call(s, "debug_launch", program=str(program),
                        breakpoints=[{"location": f"rev_watch.c:{done}"}])
        plain = st["session"]
        assert st["state"] == "stopped", st
        for name, extra in [("debug_step_back", {}), ("debug_reverse_continue", {}),
                            ("debug_last_write", {"expression": "g_total"})]:
            err = await tool_error(s, name, session=plain, **extra)
            assert "does not record" in err, (name, err)
        await call(s, "debug_end", session=plain)
        print(f"[{transport}] recorded launch; last write of g_total at the double line "
              "(45 → 90); reverse-continue to add(12) with g_total 18; step back to main's "
              "call line, and by an instruction; errors without a recording")
