// The VS Code extension in adapters/vscode: its contribution (the `tandem` debugger type's
// launch and attach attributes against docs/dap.md, snippets, the process picker) and the
// debug adapter it configures, driven with @vscode/debugadapter-testsupport the way VS Code
// drives it — bridged to a running `tandem lsp` of the same workspace.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const cp = require('node:child_process');
const { test } = require('node:test');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const REPO = path.resolve(__dirname, '..', '..');
const EXT = path.join(REPO, 'adapters', 'vscode');
const TANDEM = process.env.TANDEM_BIN
    ? path.resolve(process.env.TANDEM_BIN)
    : path.join(REPO, 'target', 'debug', 'tandem');
const TIMEOUT_MS = 20_000;

const pkg = JSON.parse(fs.readFileSync(path.join(EXT, 'package.json'), 'utf8'));
const extension = require(path.join(EXT, 'extension.js'));
const debuggerContribution = pkg.contributes.debuggers.find((d) => d.type === 'tandem');

/** The attribute names of the `## launch` / `## attach` tables of docs/dap.md. */
function documentedAttributes(request) {
    const doc = fs.readFileSync(path.join(REPO, 'docs', 'dap.md'), 'utf8');
    const section = doc.split(/^## /m).find((s) => s.startsWith(`${request}\n`));
    assert.ok(section, `docs/dap.md has no "## ${request}" section`);
    const names = [];
    for (const line of section.split('\n')) {
        const m = /^\| `([A-Za-z]+)`/.exec(line);
        if (m) {
            names.push(m[1]);
        }
    }
    assert.ok(names.length > 0, `no attribute table under "## ${request}"`);
    return names.sort();
}

/** Replaces `${workspaceFolder}` as VS Code does, and unwraps snippet escapes. */
function resolveConfig(config, folder) {
    return JSON.parse(JSON.stringify(config), (_, v) =>
        typeof v === 'string'
            ? v.replace(/^\^"(.*)"$/, '$1').replace(/\\\$/g, '$').replace(/\$\{workspaceFolder\}/g, folder)
            : v);
}

test('the debugger contribution matches the attributes the adapter accepts', () => {
    assert.ok(debuggerContribution, 'no `tandem` debugger type contributed');
    assert.deepEqual(debuggerContribution.languages.sort(), ['c', 'cpp', 'rust']);
    for (const request of ['launch', 'attach']) {
        const attrs = debuggerContribution.configurationAttributes[request];
        assert.ok(attrs, `no ${request} attributes`);
        assert.deepEqual(Object.keys(attrs.properties).sort(), documentedAttributes(request), request);
        for (const [name, prop] of Object.entries(attrs.properties)) {
            assert.ok(prop.type, `${request}.${name} has no type`);
            assert.ok(typeof prop.description === 'string' && prop.description.length > 0,
                `${request}.${name} has no description`);
        }
        for (const name of attrs.required ?? []) {
            assert.ok(name in attrs.properties, `${request} requires unknown ${name}`);
        }
    }
    const configs = [
        ...debuggerContribution.initialConfigurations,
        ...debuggerContribution.configurationSnippets.map((s) => s.body),
    ];
    assert.ok(configs.some((c) => c.request === 'attach'), 'no attach snippet');
    for (const config of configs) {
        assert.equal(config.type, 'tandem');
        const attrs = debuggerContribution.configurationAttributes[config.request];
        assert.ok(attrs, `unknown request ${config.request}`);
        for (const key of Object.keys(config)) {
            assert.ok(['type', 'request', 'name'].includes(key) || key in attrs.properties,
                `${config.name}: ${key} is not a ${config.request} attribute`);
        }
        for (const name of attrs.required ?? []) {
            assert.ok(name in config, `${config.name} lacks required ${name}`);
        }
    }
    // ${command:pickProcess} names a contributed command that the extension activates on.
    const picker = debuggerContribution.variables.pickProcess;
    assert.ok(pkg.contributes.commands.some((c) => c.command === picker), picker);
    assert.ok(pkg.activationEvents.includes(`onCommand:${picker}`));
    assert.equal(typeof extension.activate, 'function');
    assert.equal(typeof extension.deactivate, 'function');
    assert.ok(pkg.dependencies['vscode-languageclient'], 'the language client is a dependency');
    assert.deepEqual(extension.serverCommand(TANDEM), { command: TANDEM, args: ['lsp'] });
});

test('the process picker lists processes from `tandem ps --json`', { timeout: TIMEOUT_MS }, async () => {
    const items = await extension.listProcesses(TANDEM);
    const me = items.find((i) => i.pid === String(process.pid));
    assert.ok(me, `this node process (${process.pid}) is not listed`);
    assert.match(me.label, /node/);
    assert.match(me.detail, /adapters\.test\.js|node/);
    assert.ok(me.description.startsWith(String(process.pid)));
});

/** A minimal LSP client: starts `tandem lsp` for `folder` and resolves once initialized. */
function startLanguageServer(folder, env) {
    const child = cp.spawn(TANDEM, ['lsp'], { cwd: folder, env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr.on('data', () => {});
    const send = (msg) => {
        const body = Buffer.from(JSON.stringify(msg), 'utf8');
        child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
        child.stdin.write(body);
    };
    return new Promise((resolve, reject) => {
        let buffer = Buffer.alloc(0);
        child.stdout.on('data', (chunk) => {
            buffer = Buffer.concat([buffer, chunk]);
            const text = buffer.toString('utf8');
            if (text.includes('"id":1') && text.includes('"capabilities"')) {
                send({ jsonrpc: '2.0', method: 'initialized', params: {} });
                resolve(child);
            }
        });
        child.on('exit', (code) => reject(new Error(`tandem lsp exited with ${code}`)));
        send({
            jsonrpc: '2.0', id: 1, method: 'initialize',
            params: { processId: process.pid, rootUri: `file://${folder}`, capabilities: {} },
        });
    });
}

test('the configured adapter command debugs through the workspace\'s language server', { timeout: TIMEOUT_MS * 2 }, async () => {
    const folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-vscode-')));
    const runtime = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-vscode-run-'));
    const env = { ...process.env, XDG_RUNTIME_DIR: runtime };
    const src = path.join(folder, 'main.c');
    fs.copyFileSync(path.join(REPO, 'samples', 'c', 'dap_main.c'), src);
    cp.execFileSync('gcc', ['-g', '-O0', '-pthread', '-o', path.join(folder, 'a.out'), src]);
    const line = fs.readFileSync(src, 'utf8').split('\n').findIndex((l) => l.includes('LINE_ADD')) + 1;
    const lsp = await startLanguageServer(folder, env);
    // What the extension's descriptor factory hands VS Code for this folder.
    const adapter = extension.adapterCommand(TANDEM, folder);
    assert.deepEqual(adapter.args, ['dap']);
    assert.equal(adapter.options.cwd, folder);
    const dc = new DebugClient(adapter.command, adapter.args[0], 'tandem',
        { ...adapter.options, env, stdio: ['pipe', 'pipe', 'pipe'] }, false);
    dc.defaultTimeout = TIMEOUT_MS;
    try {
        await dc.start();
        const launch = resolveConfig(debuggerContribution.initialConfigurations[0], folder);
        const processEvent = dc.waitForEvent('process');
        await dc.hitBreakpoint(launch, { path: src, line });
        const debuggee = (await processEvent).body.systemProcessId;
        const status = fs.readFileSync(`/proc/${debuggee}/status`, 'utf8');
        const ppid = Number(/PPid:\s*(\d+)/.exec(status)[1]);
        assert.equal(ppid, lsp.pid, 'the session lives in the language server');
        const stack = await dc.stackTraceRequest({ threadId: (await dc.threadsRequest()).body.threads[0].id });
        assert.equal(stack.body.stackFrames[0].name, 'add');
        await dc.disconnectRequest({});
    } finally {
        dc.stopAdapter();
        lsp.kill();
        fs.rmSync(folder, { recursive: true, force: true });
        fs.rmSync(runtime, { recursive: true, force: true });
    }
});
