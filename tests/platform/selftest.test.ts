import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runStoreSelfTest } from '../../src/platform/selftest.ts';

test('the store self-test opens SQLite in WAL mode and reads back a row', () => {
  const result = runStoreSelfTest();
  assert.equal(result.journalMode, 'wal');
  assert.match(result.sqliteVersion, /^3\.\d+\.\d+$/);
  assert.equal(result.nativeBinding, 'default');
});
