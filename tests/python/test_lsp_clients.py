"""Drive `tandem lsp` with the recorded client capabilities of real editors.

pytest-lsp ships the capabilities that Neovim, VS Code and Emacs (eglot) send in their
`initialize` request; each test starts the real binary, initializes with one of them,
checks the answer and shuts down with `shutdown` then `exit`.
"""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

REPO = pathlib.Path(__file__).resolve().parents[2]
TANDEM = pathlib.Path(os.environ.get("TANDEM_BIN") or REPO / "target" / "debug" / "tandem")

# pytest-lsp's name for the client, and the clientInfo that client sends.
CLIENTS = {
    "neovim": types.ClientInfo(name="Neovim", version="0.11.0"),
    "visual-studio-code": types.ClientInfo(name="Visual Studio Code", version="1.65.2"),
    "emacs": types.ClientInfo(name="Emacs (eglot)", version="29.1"),
}

# Longest wait for one answer: a server that never answers fails instead of hanging.
TIMEOUT_S = 10

# tandem's order of preference among the encodings a client offers.
PREFERENCE = ["utf-8", "utf-16", "utf-32"]


def encoding(kind) -> str:
    """A PositionEncodingKind, or the plain string lsprotocol keeps for a custom one."""
    return str(getattr(kind, "value", kind))


def test_tandem_binary_exists():
    assert TANDEM.is_file(), f"tandem binary not found at {TANDEM} (set TANDEM_BIN)"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[str(TANDEM.resolve()), "lsp"]),
)
async def client(lsp_client: LanguageClient):
    # Editors accept dynamic registrations (tandem registers watchers for binaries when the
    # capabilities say so); pytest-lsp's client needs to be told to.
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        return None

    # Each test initializes and shuts down itself: that is what it checks.
    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:
        # The test failed before `exit`: pygls would wait for the server forever.
        server.kill()
        await server.wait()


@pytest.mark.parametrize("editor", list(CLIENTS))
async def test_initialize_and_shutdown(client: LanguageClient, editor: str):
    capabilities = client_capabilities(editor)
    offered = (
        capabilities.general.position_encodings
        if capabilities.general is not None
        else None
    )
    workspace = REPO.as_uri()
    initialize = client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            client_info=CLIENTS[editor],
            process_id=os.getpid(),
            root_uri=workspace,
            workspace_folders=[types.WorkspaceFolder(uri=workspace, name="tandem")],
        )
    )
    result = await asyncio.wait_for(initialize, TIMEOUT_S)

    assert result.server_info is not None, "initialize result has no serverInfo"
    assert result.server_info.name == "tandem"

    chosen = result.capabilities.position_encoding
    if offered:
        expected = next(e for e in PREFERENCE if e in [encoding(o) for o in offered])
        assert chosen is not None, f"{editor} offered {offered}: the choice must be stated"
        assert encoding(chosen) == expected, f"{editor} offered {offered}, got {chosen}"
    else:
        # Without an offer only UTF-16 is allowed, stated or implied.
        assert chosen is None or encoding(chosen) == "utf-16", chosen

    await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    assert client._server is not None
    assert client._server.returncode == 0, "exit after shutdown must end with code 0"
