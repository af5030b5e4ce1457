/** bench/upgrade-busy.ts: the figures and locks docs/upgrading.md quotes come from a tool that works. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { migrations as postgresMigrations } from '../../src/store/postgres/gen/migrations.ts';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';

test('upgrade-busy times every newer migration of both stores and reads the locks of each on PostgreSQL', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/upgrade-busy.ts',
      ...['--runs', '1', '--jobs', '2000', '--members', '200', '--batches', '4', '--edges', '300'],
      ...['--parents', '100', '--sqlite-from', '26', '--pg-from', '12', '--base', '.'],
    ],
    { timeout: 120_000 },
  );
  const rows = stdout
    .split('\n')
    .filter((line) => line.startsWith('| sqlite') || line.startsWith('| postgres'))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  const named = (store: string) => rows.filter((r) => r[1] === store).map((r) => r[3]);
  assert.deepEqual(named('sqlite'), [
    ...migrations.filter((m) => m.version > 26).map((m) => m.name),
    'all after 26',
  ]);
  assert.deepEqual(named('postgres'), [
    ...postgresMigrations.filter((m) => m.version > 12).map((m) => m.name),
    'all after 12',
  ]);
  const locks = (name: string) => rows.find((r) => r[3] === name)?.[6];
  // The column's ADD holds ACCESS EXCLUSIVE; the fill of its rows lets readers of jobs go on.
  assert.equal(locks('0015_flow_names.sql'), 'jobs: AccessExclusiveLock (reader waits, writer waits)');
  assert.match(
    locks('0018_job_batch_id_fill.sql') ?? '',
    /jobs: RowExclusiveLock \(reader goes on, writer goes on\)/,
  );
  assert.match(
    locks('0017_recount_job_dependents.sql') ?? '',
    /job_dependents: ShareRowExclusiveLock \(reader goes on, writer waits\)/,
  );
});
