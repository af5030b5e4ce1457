import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { buildInfo } from '../src/build-info.ts';

test('run from source, build info falls back to package.json and commit "dev"', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  assert.deepEqual(buildInfo, { version: pkg.version, commit: 'dev', bundled: false });
  assert.ok(Object.isFrozen(buildInfo));
});
