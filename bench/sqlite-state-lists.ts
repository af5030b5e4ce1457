/**
 * The engine's job lists on SQLite, this checkout against `--against DIR` (task pglist21: the
 * engine reads a state the store keeps in no index by type as one range per queue, which on
 * SQLite is no state, so its lists must read as before). 100,000 jobs in 4 queues and 8 types,
 * `--leased` of them leased (spread over the queues), the rest ready, scheduled, completed,
 * dead or cancelled, written into each tree's database before its engine opens; then each list
 * (`browseJobs`, newest first, 50 a page, and `listJobs` of one queue's leased jobs) through
 * each tree's engine, alternating. Prints the median wall time of each list.
 *
 *   npx tsx bench/sqlite-state-lists.ts [--leased 20000] [--rounds 11] --against /work/wt/base11
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { median } from './engine-lib.ts';

const { values } = parseArgs({
  options: {
    leased: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '11' },
    against: { type: 'string' },
  },
});
const leased = Number(values.leased);
const rounds = Number(values.rounds);
if (values.against === undefined) throw new Error('--against DIR: the checkout to compare with');
const trees = [resolve('.'), resolve(values.against)];
const queues = ['q0', 'q1', 'q2', 'q3'];
// Every 1 in `step` jobs leased (odd, so they fall in every queue).
const step = Math.max(1, Math.round(100_000 / leased)) | 1;
// Lease deadlines and due times a century ahead: no sweep moves a job while the lists run.
const farMs = Date.now() + 100 * 365 * 86_400_000;

type EngineModule = typeof import('../src/engine/engine.ts');
type StoreModule = typeof import('../src/store/sqlite/sqlite-store.ts');
type SettingsModule = typeof import('../src/engine/settings.ts');
type ClockModule = typeof import('../src/engine/clock.ts');

async function openEngine(root: string, dir: string) {
  const { Engine } = (await import(join(root, 'src/engine/engine.ts'))) as EngineModule;
  const { openSqliteStore } = (await import(join(root, 'src/store/sqlite/sqlite-store.ts'))) as StoreModule;
  const { defaultEngineOptions } = (await import(join(root, 'src/engine/settings.ts'))) as SettingsModule;
  const { systemClock } = (await import(join(root, 'src/engine/clock.ts'))) as ClockModule;
  return Engine.open(openSqliteStore(dir, { durability: 'relaxed' }), defaultEngineOptions(), {
    clock: systemClock,
  });
}

const opened: { root: string; dir: string; engine: Awaited<ReturnType<typeof openEngine>> }[] = [];
for (const root of trees) {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-lists-'));
  (await openEngine(root, dir)).close();
  const db = new Database(join(dir, 'sepp.db'));
  db.transaction(() => {
    for (const q of queues) db.prepare('INSERT INTO queues (name, created_at_ms) VALUES (?, 1)').run(q);
    db.prepare(
      `WITH RECURSIVE g(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM g WHERE g < 100000)
       INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts,
          enqueued_at_ms, run_at_ms, lease_deadline_ms, leased_at_ms, worker_id, attempt)
       SELECT 'j' || g, 'q' || (g % 4), 't' || (g / 4 % 8), s, 0, x'00', 'x', 3, g,
              CASE WHEN s = 'scheduled' THEN ${farMs} + g ELSE g END,
              CASE WHEN s = 'leased' THEN ${farMs} + g END, CASE WHEN s = 'leased' THEN g END,
              CASE WHEN s = 'leased' THEN 'w' END, CASE WHEN s = 'leased' THEN 1 ELSE 0 END
         FROM (SELECT g, CASE WHEN g % ${step} = 0 THEN 'leased'
                              WHEN g % 20 < 8 THEN 'ready' WHEN g % 20 < 11 THEN 'scheduled'
                              WHEN g % 20 < 16 THEN 'completed' WHEN g % 20 < 18 THEN 'dead'
                              ELSE 'cancelled' END AS s FROM g)`,
    ).run();
    db.prepare(
      `UPDATE queue_counts SET jobs = (SELECT count(*) FROM jobs j WHERE j.queue = queue_counts.queue
         AND j.state = queue_counts.state)`,
    ).run();
  })();
  db.exec('ANALYZE');
  db.close();
  opened.push({ root, dir, engine: await openEngine(root, dir) });
}

const page = { pageSize: 50, order: 'newest_first' as const };
const lists: [string, (e: (typeof opened)[number]['engine']) => Promise<unknown>][] = [
  ['browse: one queue, leased', (e) => e.browseJobs({ ...page, queue: 'q1', state: 'leased' })],
  ['browse: one queue, ready', (e) => e.browseJobs({ ...page, queue: 'q1', state: 'ready' })],
  ['browse: all 4 queues, any state', (e) => e.browseJobs(page)],
  [
    'browse: all queues, leased, type prefix t1',
    (e) => e.browseJobs({ ...page, state: 'leased', typePrefix: 't1' }),
  ],
  ['listJobs: one queue, leased', (e) => e.listJobs({ ...page, queue: 'q1', state: 'leased' })],
];
console.log(
  `SQLite, 100,000 jobs (4 queues, 8 types), every ${step}th leased; ms per list, median of ${rounds} alternating rounds (2 more first, untimed); load ${loadavg()[0]!.toFixed(1)}`,
);
console.log(`| list | ${trees.map((t, i) => (i === 0 ? 'this' : t)).join(' | ')} |`);
console.log(`| --- | ${trees.map(() => '---:').join(' | ')} |`);
for (const [label, list] of lists) {
  // Both trees list the same jobs.
  const [a, b] = [await list(opened[0]!.engine), await list(opened[1]!.engine)].map((r) =>
    JSON.stringify(r),
  ) as [string, string];
  if (a !== b)
    throw new Error(`${label}: the trees list different jobs\n${a.slice(0, 400)}\n${b.slice(0, 400)}`);
  const times = opened.map(() => [] as number[]);
  for (let round = 0; round < rounds + 2; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const start = process.hrtime.bigint();
      await list(opened[i]!.engine);
      if (round >= 2) times[i]!.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  console.log(`| ${label} | ${times.map((t) => median(t).toFixed(2)).join(' | ')} |`);
}
console.log(`load ${loadavg()[0]!.toFixed(1)} at the end`);
for (const { engine, dir } of opened) {
  engine.close();
  rmSync(dir, { recursive: true, force: true });
}
