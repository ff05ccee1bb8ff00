// Drives `tandem dap` over stdio with @vscode/debugadapter-testsupport's DebugClient,
// the client VS Code's own debug adapters are tested with: initialize, an unknown
// command, disconnect, and a clean exit once the client closes the connection.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { test, beforeEach, afterEach } = require('node:test');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

// TANDEM_BIN is taken relative to the working directory; the default, to this file.
const TANDEM = process.env.TANDEM_BIN
    ? path.resolve(process.env.TANDEM_BIN)
    : path.resolve(__dirname, '..', '..', 'target', 'debug', 'tandem');
const TIMEOUT_MS = 10_000;

/** @type {DebugClient} */
let dc;

beforeEach(async () => {
    assert.ok(fs.existsSync(TANDEM), `tandem binary not found at ${TANDEM} (set TANDEM_BIN)`);
    // DebugClient spawns `<runtime> <executable>`, here `tandem dap`.
    dc = new DebugClient(TANDEM, 'dap', 'tandem', { stdio: ['pipe', 'pipe', 'pipe'] }, false);
    dc.defaultTimeout = TIMEOUT_MS;
    await dc.start();
});

afterEach(async () => {
    // stopAdapter kills the process if a test left it running; a no-op after exit.
    dc.stopAdapter();
});

/** Resolves with the adapter's exit code (null if killed by a signal). */
function exitOf(client) {
    const child = client._adapterProcess;
    return new Promise((resolve, reject) => {
        if (child.exitCode !== null || child.signalCode !== null) {
            resolve(child.exitCode);
            return;
        }
        const timer = setTimeout(
            () => reject(new Error(`tandem dap did not exit within ${TIMEOUT_MS} ms`)),
            TIMEOUT_MS,
        );
        child.once('exit', (code) => {
            clearTimeout(timer);
            resolve(code);
        });
    });
}

test('initialize answers with honest, boolean capabilities', { timeout: TIMEOUT_MS }, async () => {
    const response = await dc.initializeRequest({
        clientID: 'vscode',
        clientName: 'Visual Studio Code',
        adapterID: 'tandem',
        locale: 'en',
        linesStartAt1: true,
        columnsStartAt1: true,
        pathFormat: 'path',
        supportsVariableType: true,
        supportsVariablePaging: true,
        supportsRunInTerminalRequest: true,
        supportsMemoryReferences: true,
        supportsProgressReporting: true,
        supportsInvalidatedEvent: true,
        supportsMemoryEvent: true,
        supportsArgsCanBeInterpretedByShell: true,
        supportsStartDebuggingRequest: true,
    });
    assert.equal(response.type, 'response');
    assert.equal(response.success, true);
    assert.equal(response.command, 'initialize');
    assert.equal(typeof response.seq, 'number');
    const capabilities = response.body ?? {};
    assert.equal(typeof capabilities, 'object');
    // Every `supports*` capability the adapter states is a boolean.
    for (const [name, value] of Object.entries(capabilities)) {
        if (name.startsWith('supports')) {
            assert.equal(typeof value, 'boolean', `capability ${name} is ${JSON.stringify(value)}`);
        }
    }
    for (const name of ['supportsConfigurationDoneRequest', 'supportsTerminateRequest']) {
        if (name in capabilities) {
            assert.equal(typeof capabilities[name], 'boolean', name);
        }
    }
    await dc.disconnectRequest({});
});

test('an unknown command fails and the session goes on', { timeout: TIMEOUT_MS }, async () => {
    await dc.initializeRequest();
    await assert.rejects(dc.send('tandemNoSuchCommand', { x: 1 }), (error) => {
        assert.ok(error.message && error.message.length > 0, 'the error response has a message');
        return true;
    });
    const response = await dc.disconnectRequest({});
    assert.equal(response.command, 'disconnect');
});

test('disconnect is answered and the adapter exits 0 when the client closes', { timeout: TIMEOUT_MS }, async () => {
    await dc.initializeRequest();
    const response = await dc.disconnectRequest({ restart: false });
    assert.equal(response.success, true);
    assert.equal(response.command, 'disconnect');
    dc._adapterProcess.stdin.end();
    assert.equal(await exitOf(dc), 0);
});
