/**
 * The esbuild plugin that keeps `__dirname`-reading dependencies working when bundled:
 * its text helpers, and a real bundle of a fixture package run from elsewhere. (Inside
 * the single executable the same modules read a private mirror instead; the smoke test
 * of the executable covers that once the server uses such a dependency.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import {
  directivePrologueEnd,
  mirrorPath,
  packageFilesPlugin,
} from '../../scripts/esbuild-package-files.mjs';

const helper = fileURLToPath(new URL('../../src/platform/package-files.ts', import.meta.url));

test('the prelude goes after a hashbang, comments and "use strict", so strict code stays strict', () => {
  const text = '#!/usr/bin/env node\n// licence\n/* more */\n"use strict";\nconst a = 1;\n';
  assert.equal(text.slice(directivePrologueEnd(text)), '\nconst a = 1;\n');
  assert.equal(directivePrologueEnd('const a = __dirname;'), 0);
});

test('mirrored paths start at the first node_modules and never climb out', () => {
  assert.equal(
    mirrorPath('/r/node_modules/@grpc/reflection/build/src'),
    'node_modules/@grpc/reflection/build/src',
  );
  assert.equal(mirrorPath('/a/node_modules/x/node_modules/y/lib'), 'node_modules/x/node_modules/y/lib');
  assert.throws(() => mirrorPath('/r/src/store'));
});

test('a bundled dependency reads its data file by __dirname from another directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-pkgfiles-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = join(dir, 'node_modules', 'fixture-pkg');
  mkdirSync(join(pkg, 'lib'), { recursive: true });
  mkdirSync(join(pkg, 'proto'));
  writeFileSync(join(pkg, 'package.json'), '{"name": "fixture-pkg", "main": "lib/index.js"}\n');
  writeFileSync(join(pkg, 'proto', 'x.proto'), 'syntax = "proto3";\n');
  writeFileSync(join(pkg, 'proto', 'notes.txt'), 'not embedded\n');
  writeFileSync(
    join(pkg, 'lib', 'index.js'),
    '"use strict";\nconst fs = require("node:fs");\n' +
      'exports.strict = (function () { return this === undefined; })();\n' +
      'exports.proto = fs.readFileSync(__dirname + "/../proto/x.proto", "utf8");\n' +
      'exports.file = require("node:path").basename(__filename);\n',
  );
  const outDir = join(dir, 'out');
  const files = packageFilesPlugin({ helper, outDir, dataExtensions: ['.proto'] });
  await build({
    stdin: { contents: 'console.log(JSON.stringify(require("fixture-pkg")));', resolveDir: dir },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: join(outDir, 'bundle.cjs'),
    plugins: [files.plugin],
    logLevel: 'error',
  });
  assert.deepEqual(files.packages(), ['node_modules/fixture-pkg']);
  assert.deepEqual([...files.dataFiles().keys()], ['files/node_modules/fixture-pkg/proto/x.proto']);

  const run = spawnSync(process.execPath, [join(outDir, 'bundle.cjs')], { cwd: tmpdir(), encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { strict: true, proto: 'syntax = "proto3";\n', file: 'index.js' });
});
