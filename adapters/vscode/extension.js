// tandem for VS Code: the `tandem` debugger type (`tandem dap`, bridged by tandem itself to
// the workspace's language server so hovers and inline values show the paused program), the
// language client (`tandem lsp`), the process picker (`tandem ps --json`) and the
// `tandem.debug` code lens command. The pure helpers at the bottom are exported for the
// tests (tests/node/adapters.test.js), which run without VS Code.
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

    const { LanguageClient } = require('vscode-languageclient/node');
    const server = serverCommand(tandemPath(settings()));
    client = new LanguageClient(
        'tandem',
        'tandem',
        { run: server, debug: server },
        {
            documentSelector: [
                { scheme: 'file', language: 'c' },
                { scheme: 'file', language: 'cpp' },
                { scheme: 'file', language: 'rust' },
            ],
            synchronize: { configurationSection: 'tandem' },
        },
    );
    context.subscriptions.push(client);
    return client.start();
}

function deactivate() {
    return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate, adapterCommand, serverCommand, processItems, listProcesses, tandemPath };
