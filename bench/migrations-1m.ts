/**
 * How long an upgrade's schema migrations take on a big database (docs/upgrading.md).
 *
 * Builds a database at schema version 1 holding `--jobs` jobs (four queues, every state of
 * that schema, payloads of 256 bytes, one job in ten with an idempotency key), then applies
 * every later migration one at a time, as a newer sepp does when it opens the data
 * directory, and prints the time each took and the file size before and after. An
 * upgrade from version N runs the steps after N, so each row is that step's cost on this
 * many jobs. Durability `full` (synchronous=FULL, fsync per commit), as `sepp serve`.
 *
 * Usage: npx tsx bench/migrations-1m.ts [--jobs 1000000] [--out bench/results/migrations-1m.txt]
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrations } from '../src/store/sqlite/gen/migrations.ts';
import { migrate } from '../src/store/sqlite/migrate.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const totalJobs = Number(option('jobs', '1000000'));
const out = option('out', '');

const dir = mkdtempSync(join(tmpdir(), 'sepp-migrations-'));
const path = join(dir, 'sepp.db');
const db = new Database(path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('foreign_keys = ON');
migrate(db, migrations.slice(0, 1));

const fillStartedMs = performance.now();
const queues = ['emails', 'reports', 'webhooks', 'billing'];
db.transaction(() => {
  for (const name of queues) db.prepare('INSERT INTO queues (name, created_at_ms) VALUES (?, 0)').run(name);
  // One statement per queue: a recursive counter gives the rows; states cycle through schema 1's.
  const perQueue = Math.ceil(totalJobs / queues.length);
  queues.forEach((queue, q) => {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
       INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, idempotency_key,
                         attempt, max_attempts, enqueued_at_ms, run_at_ms, lease_deadline_ms,
                         dead_reason, failed_at_ms, completed_at_ms, last_error)
       SELECT printf('%08x-0000-7000-8000-%012x', :q, i), :queue, 'type-' || (i % 7),
              CASE i % 10 WHEN 0 THEN 'dead' WHEN 1 THEN 'scheduled' WHEN 2 THEN 'leased'
                          WHEN 3 THEN 'completed' ELSE 'ready' END,
              i % 10, randomblob(256), 'application/json',
              CASE WHEN i % 10 = 4 THEN 'key-' || i END,
              CASE WHEN i % 10 IN (0, 2, 3) THEN 1 ELSE 0 END, 5, i, i + CASE WHEN i % 10 = 1 THEN 86400000 ELSE 0 END,
              CASE WHEN i % 10 = 2 THEN i + 30000 END,
              CASE WHEN i % 10 = 0 THEN 'attempts_exhausted' END,
              CASE WHEN i % 10 = 0 THEN i END,
              CASE WHEN i % 10 = 3 THEN i END,
              CASE WHEN i % 10 = 0 THEN 'boom' END
       FROM n`,
    ).run({ count: Math.min(perQueue, totalJobs - q * perQueue), q, queue });
  });
})();
const fillMs = performance.now() - fillStartedMs;
db.pragma('wal_checkpoint(TRUNCATE)');
const sizeBefore = statSync(path).size;

const rows: string[][] = [];
for (const migration of migrations.slice(1)) {
  const [applied] = migrate(db, migrations.slice(0, migration.version));
  rows.push([migration.name, String(applied?.durationMs ?? 0)]);
}
db.pragma('wal_checkpoint(TRUNCATE)');
const sizeAfter = statSync(path).size;
const jobsAfter = Number(db.prepare('SELECT count(*) FROM jobs').pluck().get());
db.close();
rmSync(dir, { recursive: true, force: true });

const totalMs = rows.reduce((sum, [, ms]) => sum + Number(ms), 0);
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const lines = [
  `# npx tsx bench/migrations-1m.ts --jobs ${totalJobs}`,
  `# ${new Date().toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? '?'} · load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} · node ${process.version}`,
  `# ${totalJobs} jobs at schema 1 (filled in ${(fillMs / 1000).toFixed(1)} s); file ${mib(sizeBefore)} MiB before, ${mib(sizeAfter)} MiB after; ${jobsAfter} jobs after`,
  '',
  '| migration | ms |',
  '| --- | ---: |',
  ...rows.map(([name, ms]) => `| ${name} | ${ms} |`),
  `| all (from schema 1) | ${totalMs} |`,
];
console.log(lines.join('\n'));
if (out !== '') writeFileSync(out, `${lines.join('\n')}\n`);
