// VS Code's own configuration flow through @vscode/debugadapter-testsupport (issue 18):
// setExceptionBreakpoints carries exactly the filters tandem marks `default`, which must
// keep Rust panics on; a panic then stops with the message the program prints.
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
const SOURCE = path.resolve(__dirname, '..', '..', 'samples', 'rust', 'vscode_panics.rs');
let PROGRAM;

before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-node-'));
    PROGRAM = path.join(dir, 'vscode_panics');
    execFileSync('rustc', ['-g', '-Copt-level=0', '-o', PROGRAM, SOURCE]);
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

test('a Rust panic stops with the default filters VS Code sends', { timeout: TIMEOUT_MS }, async () => {
    const initialized = dc.waitForEvent('initialized');
    const init = await dc.initializeRequest({
        clientID: 'vscode', adapterID: 'tandem', pathFormat: 'path', linesStartAt1: true,
        columnsStartAt1: true, supportsVariableType: true, supportsVariablePaging: true,
        supportsRunInTerminalRequest: true, supportsMemoryReferences: true,
        supportsProgressReporting: true, supportsInvalidatedEvent: true, supportsMemoryEvent: true,
        supportsArgsCanBeInterpretedByShell: true, supportsStartDebuggingRequest: true,
    });
    await initialized;
    const defaults = init.body.exceptionBreakpointFilters.filter((f) => f.default).map((f) => f.filter);
    assert.ok(defaults.includes('rust-panic'), JSON.stringify(defaults));
    const stoppedEvent = dc.waitForEvent('stopped');
    // dc.launch() would send initialize again: VS Code sends launch once, after it.
    await dc.launchRequest({ program: PROGRAM, args: ['index'] });
    await dc.setFunctionBreakpointsRequest({ breakpoints: [] });
    await dc.setExceptionBreakpointsRequest({ filters: defaults, filterOptions: [] });
    await dc.configurationDoneRequest();
    const stopped = await stoppedEvent;
    assert.equal(stopped.body.reason, 'exception');
    const info = await dc.exceptionInfoRequest({ threadId: stopped.body.threadId });
    assert.equal(info.body.exceptionId, 'rust-panic');
    assert.match(info.body.description, /^index out of bounds: the len is 3 but the index is 6 at /);
});
