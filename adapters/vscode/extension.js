// tandem for VS Code: the `tandem` debugger type (`tandem dap`, bridged by tandem itself to
// the workspace's language server so hovers and inline values show the paused program), the
// language client (`tandem lsp`, in companion mode beside clangd, rust-analyzer or cpptools),
// the process picker (`tandem ps --json`), the `tandem.debug` code lens command, and the
// focus of the language server's live values on the debug session VS Code shows. The helpers
// are exported for the tests (tests/node/adapters.test.js, tests/node/extension.test.js, which
// stubs the `vscode` module), which run without VS Code.
'use strict';

const { execFile } = require('node:child_process');

/** The tandem executable from the `tandem.path` setting. */
function tandemPath(settings) {
    const p = settings && typeof settings.get === 'function' ? settings.get('path') : undefined;
    return typeof p === 'string' && p.length > 0 ? p : 'tandem';
}

/**
 * How VS Code starts the debug adapter: `tandem dap` in the workspace folder, so it finds the
 * socket of the `tandem lsp` serving that folder (discovery starts at the working directory)
 * and the session shares the language server's process manager.
 */
function adapterCommand(executable, folder) {
    return { command: executable, args: ['dap'], options: folder ? { cwd: folder } : {} };
}

/** How the language client starts the server. */
function serverCommand(executable) {
    return { command: executable, args: ['lsp'] };
}

/**
 * The extensions whose language servers already serve C, C++ or Rust: beside any of them,
 * tandem serves only what a debugger knows (companion mode).
 */
const COMPANION_OF = [
    'llvm-vs-code-extensions.vscode-clangd',
    'rust-lang.rust-analyzer',
    'ms-vscode.cpptools',
];

/**
 * The `features` mode for `tandem lsp` from the `tandem.languageFeatures` setting ("auto",
 * "full" or "companion") and `isActive(id)`, which says whether an extension is installed and
 * enabled (VS Code's `extensions.getExtension` does not see disabled ones). "auto" (and any
 * value VS Code's settings validation let through) is companion when one of COMPANION_OF is.
 */
function chooseFeatures(setting, isActive) {
    if (setting === 'full' || setting === 'companion') {
        return { features: setting, because: `tandem.languageFeatures is "${setting}"` };
    }
    const beside = COMPANION_OF.filter((id) => isActive(id));
    return beside.length > 0
        ? { features: 'companion', because: `beside ${beside.join(', ')}` }
        : { features: 'full', because: 'no other C, C++ or Rust language server is enabled' };
}

/** The `initializationOptions` the language client sends. */
function initializationOptions(features) {
    return { tandem: { features } };
}

/**
 * Keeps each tandem debug session's debuggee pid (from DAP's `process` event), so the
 * language server can be told which session VS Code shows (`tandem.focusSession`).
 */
class SessionPids {
    /** `onPid(session)` is called when a session's pid becomes known. */
    constructor(onPid) {
        this.pids = new Map();
        this.onPid = onPid || (() => {});
    }

    /** A debug adapter tracker for `session` that notes its `process` event. */
    tracker(session) {
        return {
            onDidSendMessage: (m) => {
                if (m && m.type === 'event' && m.event === 'process'
                    && m.body && Number.isInteger(m.body.systemProcessId)) {
                    this.pids.set(session.id, m.body.systemProcessId);
                    this.onPid(session);
                }
            },
            onWillStopSession: () => this.pids.delete(session.id),
        };
    }

    /**
     * The `workspace/executeCommand` parameters focusing `session` (none: the newest stop);
     * with `threadId`, the thread VS Code shows in it (a forking program's children in one
     * session: the language server focuses that thread's process).
     */
    focusParams(session, threadId) {
        const pid = session ? this.pids.get(session.id) : undefined;
        const arg = { pid: pid === undefined ? null : pid };
        if (session && Number.isInteger(threadId)) {
            arg.threadId = threadId;
        }
        return { command: 'tandem.focusSession', arguments: [arg] };
    }
}

/** Quick-pick items from `tandem ps --json` (one per process, the pid as the value). */
function processItems(json) {
    const rows = JSON.parse(json);
    if (!Array.isArray(rows)) {
        throw new Error('tandem ps --json did not print a list');
    }
    return rows
        .filter((r) => r && Number.isInteger(r.pid))
        .map((r) => {
            const exe = typeof r.exe === 'string' ? r.exe : '';
            const name = typeof r.name === 'string' && r.name ? r.name : exe.split('/').pop() || String(r.pid);
            const cmd = typeof r.command === 'string' ? r.command
                : Array.isArray(r.cmdline) ? r.cmdline.join(' ') : '';
            const user = typeof r.user === 'string' ? ` · ${r.user}` : '';
            return { label: name, description: `${r.pid}${user}`, detail: cmd || exe, pid: String(r.pid) };
        });
}

/** Runs `tandem ps --json` and resolves with its quick-pick items. */
function listProcesses(executable) {
    return new Promise((resolve, reject) => {
        execFile(executable, ['ps', '--json'], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
            if (err) {
                reject(err);
                return;
            }
            try {
                resolve(processItems(stdout));
            } catch (e) {
                reject(e);
            }
        });
    });
}

let client;

/**
 * Starts the language client in the mode `chooseFeatures` picks, and starts it again when
 * the setting or the set of enabled extensions changes the mode.
 */
class Servers {
    constructor(vscode, languageClient, settings, log) {
        this.vscode = vscode;
        this.LanguageClient = languageClient.LanguageClient;
        this.settings = settings;
        this.log = log;
        this.features = undefined;
        this.client = undefined;
    }

    choice() {
        const setting = this.settings().get('languageFeatures', 'auto');
        return chooseFeatures(setting, (id) => this.vscode.extensions.getExtension(id) !== undefined);
    }

    /** Starts the client, or restarts it when the mode changed; resolves when it runs. */
    async update() {
        const { features, because } = this.choice();
        if (this.client && features === this.features) {
            return this.client;
        }
        if (this.client) {
            await this.client.stop();
        }
        this.log(`tandem lsp: ${features} language features (${because})`);
        this.features = features;
        const server = serverCommand(tandemPath(this.settings()));
        this.client = new this.LanguageClient(
            'tandem',
            'tandem',
            { run: server, debug: server },
            {
                documentSelector: [
                    { scheme: 'file', language: 'c' },
                    { scheme: 'file', language: 'cpp' },
                    { scheme: 'file', language: 'rust' },
                ],
                initializationOptions: initializationOptions(features),
                synchronize: { configurationSection: 'tandem' },
            },
        );
        client = this.client;
        await this.client.start();
        return this.client;
    }

    stop() {
        return this.client ? this.client.stop() : undefined;
    }
}

function activate(context) {
    // Required here, not at the top: the helpers above load without VS Code.
    const vscode = require('vscode');
    const settings = () => vscode.workspace.getConfiguration('tandem');

    context.subscriptions.push(
        vscode.debug.registerDebugAdapterDescriptorFactory('tandem', {
            createDebugAdapterDescriptor(session) {
                const folder = session.workspaceFolder ? session.workspaceFolder.uri.fsPath : undefined;
                const { command, args, options } = adapterCommand(tandemPath(settings()), folder);
                return new vscode.DebugAdapterExecutable(command, args, options);
            },
        }),
        vscode.commands.registerCommand('tandem.pickProcess', async () => {
            const items = await listProcesses(tandemPath(settings()));
            const picked = await vscode.window.showQuickPick(items, {
                placeHolder: 'Process to attach to',
                matchOnDescription: true,
                matchOnDetail: true,
            });
            return picked ? picked.pid : undefined;
        }),
        // The "Debug" code lens: its argument is a ready launch configuration.
        vscode.commands.registerCommand('tandem.debug', (launch) =>
            vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], launch)),
    );

    const output = vscode.window.createOutputChannel('tandem');
    const servers = new Servers(vscode, require('vscode-languageclient/node'), settings,
        (line) => output.appendLine(line));
    // The language server's live values follow the debug session VS Code shows: focused
    // when it becomes active, or when its pid arrives while it is.
    const focus = (session, threadId) => {
        if (servers.client && (!session || session.type === 'tandem')) {
            servers.client.sendRequest('workspace/executeCommand', pids.focusParams(session, threadId))
                .catch((e) => output.appendLine(`tandem.focusSession: ${e.message || e}`));
        }
    };
    const pids = new SessionPids((session) => {
        const active = vscode.debug.activeDebugSession;
        if (active && active.id === session.id) {
            focus(session);
        }
    });
    context.subscriptions.push(
        output,
        vscode.debug.registerDebugAdapterTrackerFactory('tandem', {
            createDebugAdapterTracker: (session) => pids.tracker(session),
        }),
        vscode.debug.onDidChangeActiveDebugSession((session) => focus(session)),
        vscode.extensions.onDidChange(() => servers.update()),
        vscode.workspace.onDidChangeConfiguration((e) =>
            (e.affectsConfiguration('tandem.languageFeatures') ? servers.update() : undefined)),
    );
    // The thread or frame VS Code shows (VS Code 1.90 and later): its process is focused.
    if (vscode.debug.onDidChangeActiveStackItem) {
        context.subscriptions.push(vscode.debug.onDidChangeActiveStackItem((item) => {
            if (item && item.session && item.session.type === 'tandem') {
                focus(item.session, item.threadId);
            }
        }));
    }
    return servers.update();
}

function deactivate() {
    return client ? client.stop() : undefined;
}

module.exports = {
    activate,
    deactivate,
    adapterCommand,
    serverCommand,
    processItems,
    listProcesses,
    tandemPath,
    chooseFeatures,
    initializationOptions,
    SessionPids,
    Servers,
    COMPANION_OF,
};
