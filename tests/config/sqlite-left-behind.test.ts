/**
 * A SQLite store left in the data directory of a server configured for PostgreSQL
 * (docs/postgres.md, "Moving from SQLite"): its jobs are not moved, so the server says so
 * at start and `sepp config check` prints it, instead of starting on an empty database
 * without a word.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { FileMode } from '../../src/config/file-permissions.ts';
import { sqliteLeftBehindWarnings } from '../../src/config/sqlite-left-behind.ts';
import { runSepp } from '../helpers/cli.ts';
import { loadToml } from './helpers.ts';

const postgres =
  '[store]\nkind = "postgres"\nurl = "postgres://sepp@127.0.0.1:5432/sepp"\npassword_env = "SEPP_TEST_UNUSED"\n';

/** A stat that finds only the paths listed (files, unless the name has no dot). */
function existing(...paths: string[]): (path: string) => FileMode | undefined {
  return (path) => (paths.includes(path) ? { mode: 0o600, isDirectory: !path.includes('.') } : undefined);
}

test('a sepp.db in the data directory of a PostgreSQL config is named, with what to do', () => {
  const config = loadToml(`[server]\ndata_dir = "/var/lib/sepp"\n${postgres}`, {
    env: { SEPP_TEST_UNUSED: 'pw' },
  });
  const [warning, ...more] = sqliteLeftBehindWarnings(
    config,
    existing('/var/lib/sepp', '/var/lib/sepp/sepp.db'),
  );
  assert.deepEqual(more, []);
  assert.equal(warning?.key, 'store.kind');
  assert.match(
    warning?.message ?? '',
    /^is "postgres", and \/var\/lib\/sepp\/sepp\.db holds a SQLite store that this server does not read: no job in it .* is moved to PostgreSQL\. Drain it first on a server with store\.kind = "sqlite", then move the file out of \/var\/lib\/sepp .*\(docs\/postgres\.md, "Moving from SQLite"\)$/,
  );

  assert.deepEqual(
    sqliteLeftBehindWarnings(config, existing('/var/lib/sepp')),
    [],
    'an empty data directory',
  );
  assert.deepEqual(sqliteLeftBehindWarnings(config, existing()), [], 'no data directory at all');
  const sqlite = loadToml('[server]\ndata_dir = "/var/lib/sepp"\n');
  assert.deepEqual(
    sqliteLeftBehindWarnings(sqlite, existing('/var/lib/sepp', '/var/lib/sepp/sepp.db')),
    [],
    'the SQLite store reads its own file',
  );
});

test('`sepp config check` prints it for a PostgreSQL config beside a SQLite data directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-left-'));
  try {
    const data = join(dir, 'data');
    const file = join(dir, 'sepp.toml');
    mkdirSync(data, { mode: 0o700 });
    writeFileSync(file, `[server]\ndata_dir = "${data}"\n${postgres}`, { mode: 0o600 });
    const clean = await runSepp(['config', 'check', file], { SEPP_TEST_UNUSED: 'pw' });
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(clean.stderr, '');

    writeFileSync(join(data, 'sepp.db'), '', { mode: 0o600 });
    const left = await runSepp(['config', 'check', file], { SEPP_TEST_UNUSED: 'pw' });
    assert.equal(left.code, 0, left.stderr);
    assert.equal(left.stdout, `${file}: OK\n`);
    assert.match(
      left.stderr,
      /^sepp: warning: store\.kind: is "postgres", and .*\/data\/sepp\.db holds a SQLite store that this server does not read/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
