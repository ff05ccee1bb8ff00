"""Language features of `tandem lsp` driven with the recorded capabilities of real editors.

A workspace holding samples/c/lsp_tokens.c (and its header) built with `gcc -g -O0` is served;
each editor opens the file and asks for hover, definition, documentSymbol, semantic tokens
and code lenses, then shuts the server down. pytest-lsp checks every message against the
specification and the capabilities the editor sent.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import subprocess

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from test_lsp_clients import CLIENTS, TANDEM, TIMEOUT_S

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "c"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("tandem-ws").resolve()
    for name in ("lsp_tokens.c", "lsp_tokens.h"):
        shutil.copy(SAMPLES / name, root / name)
    (root / "build").mkdir()
    subprocess.run(
        ["gcc", "-g", "-O0", "-o", "build/tokens", "lsp_tokens.c"], cwd=root, check=True
    )
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[str(TANDEM.resolve()), "lsp"]),
)
async def client(lsp_client: LanguageClient):
    # Editors accept dynamic registrations (tandem registers watchers for binaries when the
    # capabilities say so); pytest-lsp's client needs to be told to.
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        return None

    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:
        server.kill()
        await server.wait()


def decode(data: list[int], legend: types.SemanticTokensLegend):
    """(line, column, length, type, modifiers) from the relative 5-integer encoding."""
    out, line, col = [], 0, 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, mods = data[i : i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        names = [m for b, m in enumerate(legend.token_modifiers) if mods & (1 << b)]
        out.append((line, col, length, legend.token_types[kind], names))
    return out


@pytest.mark.parametrize("editor", list(CLIENTS))
async def test_features(client: LanguageClient, editor: str, workspace: pathlib.Path):
    root = workspace.as_uri()
    result = await asyncio.wait_for(
        client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(editor),
                client_info=CLIENTS[editor],
                process_id=os.getpid(),
                root_uri=root,
                workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            )
        ),
        TIMEOUT_S,
    )
    caps = result.capabilities
    uri = (workspace / "lsp_tokens.c").as_uri()
    text = (workspace / "lsp_tokens.c").read_text()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="c", version=1, text=text)
        )
    )
    doc = types.TextDocumentIdentifier(uri=uri)
    call = types.Position(line=29, character=13)  # `box_area(&b)` in main

    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=doc, position=call)),
        TIMEOUT_S,
    )
    assert hover is not None
    assert "int box_area(struct box *b)" in hover.contents.value

    definition = await asyncio.wait_for(
        client.text_document_definition_async(
            types.DefinitionParams(text_document=doc, position=call)
        ),
        TIMEOUT_S,
    )
    assert definition.uri == uri
    assert (definition.range.start.line, definition.range.start.character) == (21, 4)

    symbols = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=doc)
        ),
        TIMEOUT_S,
    )
    assert [s.name for s in symbols] == [
        "mode", "box", "limit", "total", "clamp", "box_area", "main",
    ]

    assert caps.semantic_tokens_provider is not None
    tokens = await asyncio.wait_for(
        client.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=doc)
        ),
        TIMEOUT_S,
    )
    decoded = decode(tokens.data, caps.semantic_tokens_provider.legend)
    assert (13, 11, 5, "function", ["declaration", "static"]) in decoded  # static int clamp(
    assert (13, 38, 7, "parameter", ["declaration", "readonly"]) in decoded  # const int ceiling
    assert (24, 20, 5, "property", []) in decoded  # b->width

    lenses = await asyncio.wait_for(
        client.text_document_code_lens_async(types.CodeLensParams(text_document=doc)),
        TIMEOUT_S,
    )
    assert [(l.range.start.line, l.command.command) for l in lenses] == [
        (27, "tandem.run"),
        (27, "tandem.debug"),
    ]
    assert lenses[0].command.arguments[0]["program"] == str(workspace / "build" / "tokens")

    await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    assert client._server.returncode == 0


async def published(client: LanguageClient, seen: list, uri: str, done) -> list:
    """Waits until a publishDiagnostics for `uri` satisfies `done`; returns its diagnostics."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_S
    checked = 0
    while loop.time() < deadline:
        for params in seen[checked:]:
            checked += 1
            if params.uri == uri and done(params.diagnostics):
                return params.diagnostics
        await asyncio.sleep(0.01)
    raise AssertionError(f"no matching publishDiagnostics for {uri}: {seen}")


@pytest.mark.parametrize("editor", list(CLIENTS))
async def test_unsaved_text_diagnostics(client: LanguageClient, editor: str, workspace: pathlib.Path):
    """didChange publishes the compiler's diagnostics of the unsaved buffer; fixed text clears
    them; of rapid changes only the last is published."""
    seen: list[types.PublishDiagnosticsParams] = []

    class Recording(dict):
        """pytest-lsp stores each publication in `client.diagnostics`: keep them all."""

        def __setitem__(self, uri, diagnostics):
            seen.append(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
            super().__setitem__(uri, diagnostics)

    client.diagnostics = Recording()

    root = workspace.as_uri()
    await asyncio.wait_for(
        client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(editor),
                client_info=CLIENTS[editor],
                process_id=os.getpid(),
                root_uri=root,
                workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            )
        ),
        TIMEOUT_S,
    )
    uri = (workspace / "lsp_tokens.c").as_uri()
    good = (workspace / "lsp_tokens.c").read_text()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="c", version=1, text=good)
        )
    )

    def change(version: int, text: str) -> None:
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    change(2, good.replace("return value + (note", "return valu + (note"))
    diags = await published(client, seen, uri, lambda d: len(d) > 0)
    assert len(diags) == 1
    r = diags[0].range
    assert (r.start.line, r.start.character, r.end.line, r.end.character) == (18, 11, 18, 15)
    assert diags[0].severity == types.DiagnosticSeverity.Error
    assert "valu" in diags[0].message

    change(3, good)
    await published(client, seen, uri, lambda d: len(d) == 0)

    before = len(seen)
    for i, name in enumerate(["first_error", "second_error", "third_error", "last_error"]):
        change(4 + i, good.replace("int total;", f"int total = {name};"))
    diags = await published(client, seen, uri, lambda d: any("last_error" in x.message for x in d))
    messages = [x.message for p in seen[before:] for x in p.diagnostics]
    assert not any(old in m for m in messages for old in ["first_error", "second_error", "third_error"]), messages
    r = diags[0].range
    assert (r.start.line, r.start.character, r.end.character) == (11, 12, 22)

    await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    assert client._server.returncode == 0
