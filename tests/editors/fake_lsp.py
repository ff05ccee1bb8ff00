#!/usr/bin/env python3
"""A stand-in for clangd in tests/adapters.rs: a language server over stdio that answers
`initialize` (hover and definition providers), every hover with the text "fake-clangd hover",
other requests with null, and exits on `exit`. Enough for an editor to see a second server
attached to a C buffer."""

import json
import sys


def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


while True:
    msg = read()
    if msg is None or msg.get("method") == "exit":
        break
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"capabilities": {"hoverProvider": True, "definitionProvider": True,
                                   "textDocumentSync": 1},
                  "serverInfo": {"name": "fake-clangd"}}
    elif msg["method"] == "textDocument/hover":
        result = {"contents": {"kind": "plaintext", "value": "fake-clangd hover"}}
    else:
        result = None
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
