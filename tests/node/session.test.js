// The core debugging scenarios through @vscode/debugadapter-testsupport's DebugClient, the
// way VS Code drives an adapter: launch to a breakpoint, stack, scopes and variables,
// stepping, evaluate, a function breakpoint, stop on entry, and running to the exit code.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');
const { test, before, beforeEach, afterEach } = require('node:test');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const TANDEM = process.env.TANDEM_BIN
    ? path.resolve(process.env.TANDEM_BIN)
    : path.resolve(__dirname, '..', '..', 'target', 'debug', 'tandem');
const TIMEOUT_MS = 20_000;
const SOURCE = path.resolve(__dirname, '..', '..', 'samples', 'c', 'dap_main.c');
let PROGRAM;

/** The 1-based line holding `marker` in the sample. */
function lineOf(marker) {
    const lines = fs.readFileSync(SOURCE, 'utf8').split('\n');
    const i = lines.findIndex((l) => l.includes(marker));
    assert.ok(i >= 0, `no ${marker} in ${SOURCE}`);
    return i + 1;
}

before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-node-'));
    PROGRAM = path.join(dir, 'dap_main');
    execFileSync('gcc', ['-g', '-O0', '-pthread', '-o', PROGRAM, SOURCE]);
});

/** @type {DebugClient} */
let dc;

beforeEach(async () => {
    assert.ok(fs.existsSync(TANDEM), `tandem binary not found at ${TANDEM} (set TANDEM_BIN)`);
    dc = new DebugClient(TANDEM, 'dap', 'tandem', { stdio: ['pipe', 'pipe', 'pipe'] }, false);
    dc.defaultTimeout = TIMEOUT_MS;
    await dc.start();
});

afterEach(async () => {
    try {
        await dc.disconnectRequest({});
    } catch (_) {
        // The test may have ended the session already.
    }
    dc.stopAdapter();
});

test('launch stops at a breakpoint with the right stack, scopes and values', { timeout: TIMEOUT_MS }, async () => {
    const line = lineOf('LINE_ADD');
    await dc.hitBreakpoint({ program: PROGRAM }, { path: SOURCE, line });
    const threads = await dc.threadsRequest();
    assert.ok(threads.body.threads.length >= 1);
    const stopped = threads.body.threads[0].id;
    const stack = await dc.stackTraceRequest({ threadId: stopped });
    const frames = stack.body.stackFrames;
    assert.equal(frames[0].name, 'add');
    assert.equal(frames[0].line, line);
    assert.equal(frames[0].source.path, SOURCE);
    assert.equal(frames[1].name, 'main');
    const scopes = await dc.scopesRequest({ frameId: frames[0].id });
    const args = scopes.body.scopes.find((s) => s.name === 'Arguments');
    const vars = await dc.variablesRequest({ variablesReference: args.variablesReference });
    const byName = Object.fromEntries(vars.body.variables.map((v) => [v.name, v]));
    assert.equal(byName.a.value, '2');
    assert.equal(byName.b.value, '3');
    assert.equal(byName.a.type, 'int');
    const sum = await dc.evaluateRequest({ expression: 'a + b', frameId: frames[0].id, context: 'watch' });
    assert.equal(sum.body.result, '5');
});

test('step over, step out and continue to the exit code', { timeout: TIMEOUT_MS }, async () => {
    const line = lineOf('LINE_ADD');
    await dc.hitBreakpoint({ program: PROGRAM }, { path: SOURCE, line });
    const { body } = await dc.threadsRequest();
    const threadId = body.threads[0].id;
    await dc.setBreakpointsRequest({ source: { path: SOURCE }, breakpoints: [] });
    await Promise.all([dc.nextRequest({ threadId }), dc.assertStoppedLocation('step', { path: SOURCE, line: line + 1 })]);
    await Promise.all([dc.stepOutRequest({ threadId }), dc.assertStoppedLocation('step', { path: SOURCE, line: lineOf('LINE_SHADOW') })]);
    // Both listeners first: the two events arrive together.
    const exited = dc.waitForEvent('exited');
    const terminated = dc.waitForEvent('terminated');
    await dc.continueRequest({ threadId });
    assert.equal((await exited).body.exitCode, 3);
    await terminated;
});

test('a function breakpoint stops with its reason', { timeout: TIMEOUT_MS }, async () => {
    await Promise.all([
        dc.waitForEvent('initialized').then(async () => {
            const r = await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'depth' }] });
            assert.equal(r.body.breakpoints[0].verified, true);
            return dc.configurationDoneRequest();
        }),
        dc.launch({ program: PROGRAM }),
        dc.waitForEvent('stopped').then((e) => assert.equal(e.body.reason, 'function breakpoint')),
    ]);
});

test('stopOnEntry reports the entry stop, and output reaches the console', { timeout: TIMEOUT_MS }, async () => {
    await Promise.all([
        dc.configurationSequence(),
        dc.launch({ program: PROGRAM, stopOnEntry: true, args: ['a b'] }),
        dc.waitForEvent('stopped').then((e) => assert.equal(e.body.reason, 'entry')),
    ]);
    const { body } = await dc.threadsRequest();
    const out = dc.assertOutput('stdout', 'args=1 [a b]');
    const terminated = dc.waitForEvent('terminated');
    await dc.continueRequest({ threadId: body.threads[0].id });
    await out;
    await terminated;
});
