// The VS Code extension as a package: `npm run package` in adapters/vscode builds tandem.vsix
// with @vscode/vsce (installed there by tests/node/run.sh), and the manifest inside the .vsix
// is checked: what it contributes (the debugger type whose launch and attach attributes are
// docs/dap.md's tables, the settings with tandem.languageFeatures, the commands), its
// activation events, and that the files it runs from (extension.js, vscode-languageclient)
// are in it while the packager is not.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const cp = require('node:child_process');
const { test } = require('node:test');

const REPO = path.resolve(__dirname, '..', '..');
const EXT = path.join(REPO, 'adapters', 'vscode');
const VSIX = path.join(EXT, 'tandem.vsix');

/** The attribute names of the `## launch` / `## attach` tables of docs/dap.md. */
function documentedAttributes(request) {
    const doc = fs.readFileSync(path.join(REPO, 'docs', 'dap.md'), 'utf8');
    const section = doc.split(/^## /m).find((s) => s.startsWith(`${request}\n`));
    assert.ok(section, `docs/dap.md has no "## ${request}" section`);
    return section.split('\n')
        .map((l) => /^\| `([A-Za-z]+)`/.exec(l))
        .filter(Boolean)
        .map((m) => m[1])
        .sort();
}

test('npm run package builds a .vsix whose manifest is the extension', () => {
    fs.rmSync(VSIX, { force: true });
    const out = cp.execFileSync('npm', ['run', 'package'], { cwd: EXT, encoding: 'utf8', timeout: 300_000 });
    assert.ok(fs.existsSync(VSIX), `no tandem.vsix after npm run package:\n${out}`);
    const files = cp.execFileSync('unzip', ['-Z1', VSIX], { encoding: 'utf8' }).split('\n');
    for (const f of ['extension.vsixmanifest', 'extension/package.json', 'extension/extension.js',
        'extension/node_modules/vscode-languageclient/node.js']) {
        assert.ok(files.includes(f), `${f} not in the .vsix`);
    }
    assert.ok(!files.some((f) => f.includes('@vscode/vsce')), 'the packager was packaged');

    const manifest = JSON.parse(cp.execFileSync('unzip', ['-p', VSIX, 'extension/package.json'], { encoding: 'utf8' }));
    assert.equal(manifest.main, './extension.js');
    for (const event of ['onDebugResolve:tandem', 'onLanguage:c', 'onLanguage:cpp', 'onLanguage:rust']) {
        assert.ok(manifest.activationEvents.includes(event), `activation event ${event} missing`);
    }
    const dbg = manifest.contributes.debuggers.find((d) => d.type === 'tandem');
    assert.ok(dbg, 'no tandem debugger type in the packaged manifest');
    for (const request of ['launch', 'attach']) {
        assert.deepEqual(Object.keys(dbg.configurationAttributes[request].properties).sort(),
            documentedAttributes(request), `${request} attributes against docs/dap.md`);
    }
    const settings = manifest.contributes.configuration.properties;
    assert.deepEqual(settings['tandem.languageFeatures'].enum, ['auto', 'full', 'companion']);
    assert.equal(settings['tandem.languageFeatures'].default, 'auto');
    assert.ok(manifest.contributes.commands.some((c) => c.command === 'tandem.pickProcess'));
    const xml = cp.execFileSync('unzip', ['-p', VSIX, 'extension.vsixmanifest'], { encoding: 'utf8' });
    assert.match(xml, /<Identity [^>]*Id="tandem"[^>]*Publisher="tandem"/);
    console.log(`tandem.vsix: ${files.length} files; manifest contributes the debugger (launch ${documentedAttributes('launch').length}, attach ${documentedAttributes('attach').length} attributes as docs/dap.md), tandem.languageFeatures, activation events`);
});
