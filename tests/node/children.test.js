// Fork children in sessions of their own through @vscode/debugadapter-testsupport (issue
// 31), as VS Code opens them: the parent's adapter sends the reverse request
// `startDebugging`; the client answers it, starts a second adapter, initializes it and sends
// the given `attach` configuration, breakpoints and configurationDone. Each worker of
// samples/c/forks.c stops in its job with its own `k`, and every process exits as it does
// without the debugger.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');
const { test, before } = require('node:test');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const TANDEM = process.env.TANDEM_BIN
    ? path.resolve(process.env.TANDEM_BIN)
    : path.resolve(__dirname, '..', '..', 'target', 'debug', 'tandem');
const TIMEOUT_MS = 30_000;
const SOURCE = path.resolve(__dirname, '..', '..', 'samples', 'c', 'forks.c');
const CAPS = {
    clientID: 'vscode', adapterID: 'tandem', pathFormat: 'path', linesStartAt1: true,
    columnsStartAt1: true, supportsVariableType: true, supportsRunInTerminalRequest: true,
    supportsStartDebuggingRequest: true,
};
let PROGRAM;
let JOB_LINE;

before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-node-forks-'));
    PROGRAM = path.join(dir, 'forks');
    execFileSync('gcc', ['-g', '-O0', '-o', PROGRAM, SOURCE]);
    JOB_LINE = fs.readFileSync(SOURCE, 'utf8').split('\n').findIndex((l) => l.includes('S:job')) + 1;
    assert.ok(JOB_LINE > 0);
});

/** A client that also receives the adapter's reverse requests (the test-support client
 * only dispatches events and responses): `onRequest(request)` answers them. */
function clientWithReverseRequests(onRequest) {
    const dc = new DebugClient(TANDEM, 'dap', 'tandem', { stdio: ['pipe', 'pipe', 'pipe'] }, false);
    dc.defaultTimeout = TIMEOUT_MS;
    const dispatch = dc.dispatch.bind(dc);
    dc.dispatch = (body) => {
        const message = JSON.parse(body);
        if (message.type === 'request') {
            onRequest(message, (success, responseBody) => {
                const response = JSON.stringify({
                    seq: 0, type: 'response', request_seq: message.seq, command: message.command,
                    success, body: responseBody,
                });
                dc.outputStream.write(`Content-Length: ${Buffer.byteLength(response, 'utf8')}\r\n\r\n${response}`, 'utf8');
            });
        } else {
            dispatch(body);
        }
    };
    return dc;
}

test('each forked worker is debugged in a session of its own', { timeout: 4 * TIMEOUT_MS }, async () => {
    assert.ok(fs.existsSync(TANDEM), `tandem binary not found at ${TANDEM} (set TANDEM_BIN)`);
    const expected = execFileSync(PROGRAM, ['prefork']).toString();
    const asked = [];
    let wake = null;
    const parent = clientWithReverseRequests((request, respond) => {
        assert.equal(request.command, 'startDebugging');
        respond(true, {});
        asked.push(request.arguments);
        if (wake) {
            wake();
        }
    });
    await parent.start();
    let printed = '';
    parent.on('output', (e) => {
        if (e.body.category === 'stdout') {
            printed += e.body.output;
        }
    });
    const initialized = parent.waitForEvent('initialized');
    await parent.initializeRequest(CAPS);
    await initialized;
    const exited = parent.waitForEvent('exited', 4 * TIMEOUT_MS);
    const terminated = parent.waitForEvent('terminated', 4 * TIMEOUT_MS);
    await parent.launchRequest({ type: 'tandem', program: PROGRAM, args: ['prefork'], stdio: 'pipes' });
    await parent.configurationDoneRequest();
    const ks = [];
    for (let i = 0; i < 3; i++) {
        while (asked.length === 0) {
            await new Promise((resolve) => { wake = resolve; });
        }
        const { request, configuration } = asked.shift();
        assert.equal(request, 'attach');
        assert.equal(configuration.request, 'attach');
        assert.match(configuration.name, new RegExp(`\\[${configuration.pid}\\]$`));
        const child = new DebugClient(TANDEM, 'dap', 'tandem', { stdio: ['pipe', 'pipe', 'pipe'] }, false);
        child.defaultTimeout = TIMEOUT_MS;
        await child.start();
        const childInit = child.waitForEvent('initialized');
        await child.initializeRequest(CAPS);
        await childInit;
        const stopped = child.waitForEvent('stopped');
        await child.attachRequest(configuration);
        const bps = await child.setBreakpointsRequest({ source: { path: SOURCE }, breakpoints: [{ line: JOB_LINE }] });
        assert.equal(bps.body.breakpoints[0].verified, true);
        await child.configurationDoneRequest();
        const stop = await stopped;
        assert.equal(stop.body.reason, 'breakpoint');
        const trace = await child.stackTraceRequest({ threadId: stop.body.threadId });
        assert.equal(trace.body.stackFrames[0].name, 'job');
        const k = await child.evaluateRequest({ expression: 'k', frameId: trace.body.stackFrames[0].id, context: 'watch' });
        ks.push(k.body.result);
        const childExited = child.waitForEvent('exited');
        await child.continueRequest({ threadId: stop.body.threadId });
        const code = (await childExited).body.exitCode;
        assert.ok(expected.includes(`worker ${k.body.result} exit ${code}\n`), `${expected} / ${code}`);
        await child.disconnectRequest({});
        child.stopAdapter();
    }
    assert.deepEqual(ks.sort(), ['0', '1', '2']);
    assert.equal((await exited).body.exitCode, 0);
    await terminated;
    assert.equal(printed, expected);
    try {
        await parent.disconnectRequest({});
    } catch (_) {
        // Ended already.
    }
    parent.stopAdapter();
});
