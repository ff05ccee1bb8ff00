"""Full and companion mode of `tandem lsp`, driven with the recorded capabilities of VS Code
and Neovim.

Each editor initializes once per mode against a workspace holding samples/c/companion.c
(built `gcc -g -O0`). Checked: the capabilities of each mode; in full mode an unsaved syntax
error gets the compiler's diagnostic, in companion mode none arrives (waited for three times
as long as full mode took, at least two seconds); in companion mode a hover is `null` while
nothing is paused, is the live value (the one DAP's `evaluate` gives) while a `tandem dap`
bridged to the server is paused, and `null` again after the program ends; the breakpoint
line's code lens counts the stops the DAP client saw. An unknown mode is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from test_lsp_clients import CLIENTS, TANDEM, TIMEOUT_S

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "c" / "companion.c"
EDITORS = ["visual-studio-code", "neovim"]


@pytest.fixture()
def workspace(tmp_path) -> pathlib.Path:
    root = tmp_path.resolve()
    shutil.copy(SAMPLE, root / "companion.c")
    subprocess.run(["gcc", "-g", "-O0", "-o", "companion", "companion.c"], cwd=root, check=True)
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[str(TANDEM.resolve()), "lsp"]),
)
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        return None

    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLINE_VALUE_REFRESH):
        lsp_client.feature(method)(lambda params: None)

    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:
        server.kill()
        await server.wait()


def line_of(marker: str) -> int:
    """The 0-based line holding `marker` in the sample."""
    return next(i for i, l in enumerate(SAMPLE.read_text().splitlines()) if marker in l)


async def initialize(client: LanguageClient, editor: str, root: pathlib.Path, features: str | None):
    options = {"tandem": {"features": features}} if features else None
    return await asyncio.wait_for(
        client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(editor),
                client_info=CLIENTS[editor],
                process_id=os.getpid(),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
                initialization_options=options,
            )
        ),
        TIMEOUT_S,
    )


def open_with_syntax_error(client: LanguageClient, uri: str) -> None:
    text = SAMPLE.read_text()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="c", version=1, text=text)
        )
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=text.replace("int sq = v * v;", "int sq = v * ;"))],
        )
    )


def compiler_errors(client: LanguageClient, uri: str) -> list:
    return [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error]


# How long full mode took to publish the compiler's error, per editor: companion mode is
# given three times as long to (not) publish one.
FULL_DELAY: dict[str, float] = {}


@pytest.mark.parametrize("editor", EDITORS)
async def test_full_mode_serves_everything(client: LanguageClient, editor: str, workspace: pathlib.Path):
    result = await initialize(client, editor, workspace, None)
    caps = result.capabilities
    for name in ("document_symbol_provider", "definition_provider", "workspace_symbol_provider",
                 "semantic_tokens_provider", "hover_provider", "inline_value_provider",
                 "code_lens_provider", "execute_command_provider"):
        assert getattr(caps, name), f"full mode lacks {name}"
    uri = (workspace / "companion.c").as_uri()
    start = time.monotonic()
    open_with_syntax_error(client, uri)
    deadline = start + TIMEOUT_S
    while not compiler_errors(client, uri):
        assert time.monotonic() < deadline, "full mode published no compiler error"
        await asyncio.sleep(0.02)
    FULL_DELAY[editor] = time.monotonic() - start
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line_of("LINE_SQ"),
                                character=SAMPLE.read_text().splitlines()[line_of("LINE_SQ")].index("v *"))))
    assert hover is not None and "parameter" in hover.contents.value, hover
    await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    print(f"{editor}: full mode advertises symbols/definitions/tokens, compiler error after {FULL_DELAY[editor]:.2f}s, declaration hover")


class Dap:
    """A DAP client of `tandem dap` started in the workspace (so it bridges to the server)."""

    def __init__(self, root: pathlib.Path):
        self.proc = subprocess.Popen([str(TANDEM.resolve()), "dap"], cwd=root,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.seq = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        length = None
        while True:
            line = self.proc.stdout.readline()
            assert line, "tandem dap closed its output"
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, command: str, arguments: dict) -> dict:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        while True:
            msg = self._read()
            if msg.get("type") == "response" and msg.get("request_seq") == self.seq:
                assert msg["success"], msg
                return msg.get("body") or {}
            if msg.get("type") == "event":
                self.events.append(msg)

    def event(self, name: str) -> dict:
        for i, e in enumerate(self.events):
            if e["event"] == name:
                return self.events.pop(i)
        while True:
            msg = self._read()
            if msg.get("type") == "event" and msg["event"] == name:
                return msg
            if msg.get("type") == "event":
                self.events.append(msg)

    def close(self):
        self.request("disconnect", {})
        self.proc.wait(timeout=TIMEOUT_S)


@pytest.mark.parametrize("editor", EDITORS)
async def test_companion_mode_serves_only_what_the_debugger_knows(
        client: LanguageClient, editor: str, workspace: pathlib.Path):
    result = await initialize(client, editor, workspace, "companion")
    caps = result.capabilities
    for name in ("document_symbol_provider", "definition_provider", "declaration_provider",
                 "workspace_symbol_provider", "semantic_tokens_provider"):
        assert getattr(caps, name) is None, f"companion mode advertises {name}"
    for name in ("hover_provider", "inline_value_provider", "code_lens_provider"):
        assert getattr(caps, name), f"companion mode lacks {name}"
    assert "tandem.focusSession" in caps.execute_command_provider.commands

    uri = (workspace / "companion.c").as_uri()
    open_with_syntax_error(client, uri)
    quiet = max(2.0, 3 * FULL_DELAY.get(editor, 1.0))
    await asyncio.sleep(quiet)
    assert compiler_errors(client, uri) == [], client.diagnostics.get(uri)
    # Back to the text on disk (which the binary was built from) for the live part.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SAMPLE.read_text())]))

    doc = types.TextDocumentIdentifier(uri=uri)
    sq = line_of("LINE_SQ")
    at_v = types.Position(line=sq, character=SAMPLE.read_text().splitlines()[sq].index("v *"))
    hover = await client.text_document_hover_async(types.HoverParams(text_document=doc, position=at_v))
    assert hover is None, f"a hover while nothing is paused: {hover}"

    dap = Dap(workspace)
    try:
        dap.request("initialize", {"adapterID": "tandem", "linesStartAt1": True, "columnsStartAt1": True})
        dap.request("launch", {"program": "companion"})
        dap.request("setBreakpoints", {"source": {"path": str(workspace / "companion.c")},
                                       "breakpoints": [{"line": sq + 1}]})
        dap.request("configurationDone", {})
        stops = 0
        for _ in range(2):
            stop = dap.event("stopped")
            stops += 1
            tid = stop["body"]["threadId"]
            if stops < 2:
                dap.request("continue", {"threadId": tid})
        frame = dap.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        v = dap.request("evaluate", {"expression": "v", "frameId": frame, "context": "hover"})["result"]

        hover = await client.text_document_hover_async(types.HoverParams(text_document=doc, position=at_v))
        assert hover is not None and f"v = {v}" in hover.contents.value, hover
        assert "parameter" not in hover.contents.value, hover.contents.value
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
        titles = [(l.range.start.line, l.command.title) for l in lenses]
        assert (sq, f"● breakpoint hit {stops} times") in titles, titles

        dap.request("setBreakpoints", {"source": {"path": str(workspace / "companion.c")}, "breakpoints": []})
        dap.request("continue", {"threadId": tid})
        dap.event("terminated")
        hover = await client.text_document_hover_async(types.HoverParams(text_document=doc, position=at_v))
        assert hover is None, f"a hover after the program ended: {hover}"
    finally:
        dap.close()
    await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    print(f"{editor}: companion mode advertises no symbols/definitions/tokens, no compiler error in {quiet:.1f}s, "
          f"hover null / live v = {v} / null, lens hit {stops} times")


@pytest.mark.parametrize("editor", EDITORS)
async def test_an_unknown_mode_is_refused(client: LanguageClient, editor: str, workspace: pathlib.Path):
    with pytest.raises(Exception) as refused:
        await initialize(client, editor, workspace, "everything")
    message = str(refused.value)
    assert '"full"' in message and '"companion"' in message, message
    print(f"{editor}: unknown mode refused: {message}")
