// The VS Code extension's own logic, without VS Code: `vscode` and `vscode-languageclient`
// are stubbed, except that the stub language client really starts the server command the
// extension chose (`tandem lsp`) and sends its `initialize` with the extension's
// initializationOptions, so the mode chosen is checked against what the real server
// advertises. Checked: the mode choice (auto/full/companion, beside clangd, rust-analyzer or
// cpptools), the restart when extensions or the setting change, the debug adapter command,
// and the focus of live values on the active debug session (tandem.focusSession).
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const cp = require('node:child_process');
const Module = require('node:module');
const { test } = require('node:test');

const REPO = path.resolve(__dirname, '..', '..');
const TANDEM = process.env.TANDEM_BIN
    ? path.resolve(process.env.TANDEM_BIN)
    : path.join(REPO, 'target', 'debug', 'tandem');
const TIMEOUT_MS = 20_000;

/** One `initialize` round trip with a real server process; resolves with its capabilities. */
function initialize(command, args, initializationOptions) {
    return new Promise((resolve, reject) => {
        const child = cp.spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
        const timer = setTimeout(() => {
            child.kill();
            reject(new Error('no initialize answer'));
        }, TIMEOUT_MS);
        let buf = Buffer.alloc(0);
        child.stdout.on('data', (chunk) => {
            buf = Buffer.concat([buf, chunk]);
            const head = buf.indexOf('\r\n\r\n');
            if (head < 0) {
                return;
            }
            const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, head).toString())[1]);
            if (buf.length < head + 4 + len) {
                return;
            }
            clearTimeout(timer);
            const msg = JSON.parse(buf.subarray(head + 4, head + 4 + len).toString());
            child.kill();
            resolve(msg);
        });
        const body = JSON.stringify({
            jsonrpc: '2.0', id: 1, method: 'initialize',
            params: { processId: null, rootUri: null, capabilities: {}, initializationOptions },
        });
        child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
}

/** A fake VS Code: the extensions enabled, the settings, and what the extension registered. */
function fakeVscode() {
    const listeners = { extensions: [], config: [], activeSession: [], activeStackItem: [] };
    const vscode = {
        enabled: new Set(),
        config: { path: TANDEM, languageFeatures: 'auto' },
        registered: {},
        clients: [],
        debug: {
            activeDebugSession: undefined,
            registerDebugAdapterDescriptorFactory: (type, f) => { vscode.registered.descriptor = f; return { dispose() {} }; },
            registerDebugAdapterTrackerFactory: (type, f) => { vscode.registered.tracker = f; return { dispose() {} }; },
            onDidChangeActiveDebugSession: (f) => { listeners.activeSession.push(f); return { dispose() {} }; },
            onDidChangeActiveStackItem: (f) => { listeners.activeStackItem.push(f); return { dispose() {} }; },
            startDebugging: () => Promise.resolve(true),
        },
        extensions: {
            getExtension: (id) => (vscode.enabled.has(id) ? { id } : undefined),
            onDidChange: (f) => { listeners.extensions.push(f); return { dispose() {} }; },
        },
        workspace: {
            getConfiguration: () => ({ get: (k, d) => (k in vscode.config ? vscode.config[k] : d) }),
            onDidChangeConfiguration: (f) => { listeners.config.push(f); return { dispose() {} }; },
            workspaceFolders: [],
        },
        window: {
            createOutputChannel: () => ({ lines: [], appendLine(l) { this.lines.push(l); }, dispose() {} }),
            showQuickPick: () => Promise.resolve(undefined),
        },
        commands: { registerCommand: () => ({ dispose() {} }) },
        DebugAdapterExecutable: class { constructor(command, args, options) { Object.assign(this, { command, args, options }); } },
        fire: (kind, arg) => Promise.all(listeners[kind].map((f) => f(arg))),
    };
    return vscode;
}

/** The stub language client: starts the real server and records what it answered. */
function fakeLanguageClient(vscode) {
    return {
        LanguageClient: class {
            constructor(id, name, serverOptions, clientOptions) {
                Object.assign(this, { id, serverOptions, clientOptions, requests: [], stopped: false });
                vscode.clients.push(this);
            }
            async start() {
                const { command, args } = this.serverOptions.run;
                this.initialized = await initialize(command, args, this.clientOptions.initializationOptions);
            }
            stop() { this.stopped = true; return Promise.resolve(); }
            sendRequest(method, params) { this.requests.push({ method, params }); return Promise.resolve(null); }
        },
    };
}

// `vscode` and the language client resolve to the stubs of the test that loaded the
// extension last (extension.js requires them inside `activate`).
const stubs = {};
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
    return request in stubs ? request : resolveFilename.call(this, request, ...rest);
};

/** Loads extension.js afresh with `vscode` and the language client stubbed. */
function loadExtension(vscode) {
    stubs.vscode = vscode;
    stubs['vscode-languageclient/node'] = fakeLanguageClient(vscode);
    for (const [name, exports] of Object.entries(stubs)) {
        require.cache[name] = { id: name, filename: name, loaded: true, exports };
    }
    const file = path.join(REPO, 'adapters', 'vscode', 'extension.js');
    delete require.cache[file];
    return require(file);
}

test('the mode is companion beside clangd, rust-analyzer or cpptools, unless the setting says', () => {
    const { chooseFeatures, COMPANION_OF } = loadExtension(fakeVscode());
    assert.equal(chooseFeatures('auto', () => false).features, 'full');
    for (const id of COMPANION_OF) {
        const choice = chooseFeatures('auto', (x) => x === id);
        assert.equal(choice.features, 'companion', id);
        assert.match(choice.because, new RegExp(id.replace(/\./g, '\\.')));
    }
    assert.equal(chooseFeatures('full', () => true).features, 'full');
    assert.equal(chooseFeatures('companion', () => false).features, 'companion');
    assert.equal(chooseFeatures(undefined, () => true).features, 'companion');
    console.log(`mode choice: companion beside ${COMPANION_OF.join(', ')}; full alone; the setting wins`);
});

test('activation starts tandem lsp in the chosen mode and restarts it when the choice changes', async () => {
    const vscode = fakeVscode();
    vscode.enabled.add('llvm-vs-code-extensions.vscode-clangd');
    const extension = loadExtension(vscode);
    await extension.activate({ subscriptions: [] });

    assert.equal(vscode.clients.length, 1);
    const first = vscode.clients[0];
    assert.deepEqual(first.serverOptions.run, { command: TANDEM, args: ['lsp'] });
    assert.deepEqual(first.clientOptions.initializationOptions, { tandem: { features: 'companion' } });
    const caps = first.initialized.result.capabilities;
    assert.equal(caps.documentSymbolProvider, undefined, JSON.stringify(caps));
    assert.equal(caps.semanticTokensProvider, undefined, JSON.stringify(caps));
    assert.equal(caps.hoverProvider, true);
    assert.ok(caps.executeCommandProvider.commands.includes('tandem.focusSession'));

    // clangd disabled: full mode, in a new server.
    vscode.enabled.clear();
    await vscode.fire('extensions');
    assert.equal(vscode.clients.length, 2);
    assert.equal(first.stopped, true);
    assert.equal(vscode.clients[1].initialized.result.capabilities.documentSymbolProvider, true);
    // Nothing changed: no restart.
    await vscode.fire('extensions');
    assert.equal(vscode.clients.length, 2);
    // The setting forces companion mode.
    vscode.config.languageFeatures = 'companion';
    await vscode.fire('config', { affectsConfiguration: (s) => s === 'tandem.languageFeatures' });
    assert.equal(vscode.clients.length, 3);
    assert.equal(vscode.clients[2].initialized.result.capabilities.definitionProvider, undefined);

    // The debug adapter is `tandem dap` in the session's folder.
    const descriptor = vscode.registered.descriptor.createDebugAdapterDescriptor({
        workspaceFolder: { uri: { fsPath: '/ws' } },
    });
    assert.deepEqual([descriptor.command, descriptor.args, descriptor.options], [TANDEM, ['dap'], { cwd: '/ws' }]);
    await extension.deactivate();
    assert.equal(vscode.clients[2].stopped, true);
    console.log('servers: companion beside clangd, full after it is disabled, companion by setting (real tandem lsp capabilities)');
});

test('live values follow the debug session VS Code shows', async () => {
    const vscode = fakeVscode();
    const extension = loadExtension(vscode);
    await extension.activate({ subscriptions: [] });
    const client = vscode.clients[0];
    const a = { id: 'a', type: 'tandem' };
    const b = { id: 'b', type: 'tandem' };
    const trackA = vscode.registered.tracker.createDebugAdapterTracker(a);
    const trackB = vscode.registered.tracker.createDebugAdapterTracker(b);
    vscode.debug.activeDebugSession = a;
    trackA.onDidSendMessage({ type: 'event', event: 'process', body: { systemProcessId: 101 } });
    trackB.onDidSendMessage({ type: 'event', event: 'process', body: { systemProcessId: 202 } });
    await vscode.fire('activeSession', b);
    await vscode.fire('activeSession', undefined);
    await vscode.fire('activeSession', { id: 'c', type: 'cppdbg' });
    // A thread (or a frame of one) shown in a tandem session: that thread is focused.
    await vscode.fire('activeStackItem', { session: b, threadId: 303 });
    await vscode.fire('activeStackItem', { session: a, threadId: 104, frameId: 7 });
    await vscode.fire('activeStackItem', { session: { id: 'c', type: 'cppdbg' }, threadId: 1 });
    await vscode.fire('activeStackItem', undefined);
    assert.deepEqual(client.requests, [
        { method: 'workspace/executeCommand', params: { command: 'tandem.focusSession', arguments: [{ pid: 101 }] } },
        { method: 'workspace/executeCommand', params: { command: 'tandem.focusSession', arguments: [{ pid: 202 }] } },
        { method: 'workspace/executeCommand', params: { command: 'tandem.focusSession', arguments: [{ pid: null }] } },
        { method: 'workspace/executeCommand', params: { command: 'tandem.focusSession', arguments: [{ pid: 202, threadId: 303 }] } },
        { method: 'workspace/executeCommand', params: { command: 'tandem.focusSession', arguments: [{ pid: 101, threadId: 104 }] } },
    ]);
    trackA.onWillStopSession();
    assert.deepEqual(new extension.SessionPids().focusParams(a).arguments, [{ pid: null }]);
    await extension.deactivate();
    console.log('focus: the active tandem session pid is sent as tandem.focusSession, with the thread VS Code shows; none -> null; other debuggers ignored');
});
