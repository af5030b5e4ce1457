/**
 * docs/replication.md names the exact npm package and version that carries the Litestream
 * sepp is tested with: the ones the tests install, and the binary says that version.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const doc = readFileSync(new URL('docs/replication.md', root), 'utf8');

test('docs/replication.md: the npm package, its version and the Litestream version the tests use', () => {
  const install = /npm install --prefix \S+ (@flydotio\/litestream-linux-x64)@(\S+)/.exec(doc);
  assert.ok(install, 'the install command is shown');
  const [, name, version] = install;
  const dir = new URL(`node_modules/${name}/`, root);
  const installed = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { version: string };
  assert.equal(version, installed.version, `the docs say ${name}@${version}`);
  const wrapper = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  assert.ok(
    wrapper.devDependencies['@flydotio/litestream'],
    'the tests take it through @flydotio/litestream',
  );
  const binaryVersion = execFileSync(new URL('litestream', dir).pathname, ['version'], {
    encoding: 'utf8',
  }).trim();
  assert.match(doc, new RegExp(`litestream version\\s+# ${binaryVersion.replace(/\./g, '\\.')}`));
  assert.match(doc, new RegExp(`tested with Litestream ${binaryVersion.slice(1).replace(/\./g, '\\.')}\\.`));
});
