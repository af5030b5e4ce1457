/**
 * What forged "jobs ready" signals cost a sepp server on PostgreSQL (task harden20, after
 * attack7): any role that can connect may NOTIFY on the servers' channel `sepp_<schema>`.
 * One `sepp serve` (a checkout's sources) on a fresh PostgreSQL 15 cluster
 * (tests/helpers/postgres.ts), a worker long-polling the queue `mail` through it; then a
 * role sends `--signals` NOTIFYs in one statement, each the payload a server sends for one
 * ready job (src/store/postgres/signals.ts), for a made-up queue each (`made-up`), or all for
 * the waited-on queue `mail` (`waited`). Measured: the server process's CPU from the
 * statement until it is idle again (no tick for 500 ms), less what it used idle over as long
 * before. Runs alternate between the checkouts, `--runs` times, each on a new schema;
 * prints medians, with the load average around each run.
 *
 *   npx tsx bench/pg-forged-ready.ts --signals 5000 --runs 3 [--against DIR]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { cpuMicros } from './lib/proc-stats.ts';
import { startSeppServe } from './lib/sepp-serve.ts';

const { values } = parseArgs({
  options: {
    signals: { type: 'string', default: '5000' },
    runs: { type: 'string', default: '3' },
    against: { type: 'string' },
  },
});
const signals = Number(values.signals);
const runs = Number(values.runs);
const checkouts = [
  { label: 'this', srcDir: new URL('..', import.meta.url).pathname },
  ...(values.against === undefined ? [] : [{ label: values.against, srcDir: values.against }]),
];
const shapes = ['made-up', 'waited'] as const;
type Shape = (typeof shapes)[number];

const cluster = await startPostgres();
const database = await cluster.createDatabase('bench');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `pid` used no CPU tick for 500 ms; returns its CPU microseconds then. */
async function idleCpu(pid: number): Promise<number> {
  let last = cpuMicros([pid]);
  for (;;) {
    await sleep(500);
    const now = cpuMicros([pid]);
    if (now === last) return now;
    last = now;
  }
}

let schemas = 0;
async function runOnce(srcDir: string, shape: Shape): Promise<{ cpuMs: number; load: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-pg-forged-'));
  const schema = `forged_${schemas++}`;
  const loadBefore = loadavg()[0]?.toFixed(1);
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    `[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "${schema}"\n[queues.mail]\n`,
  );
  mkdirSync(join(dir, 'server'));
  const serve = await startSeppServe({ srcDir, config, dir: join(dir, 'server') });
  const client = SeppClient.connect(`127.0.0.1:${serve.grpcPort}`);
  const forger = new pg.Client(cluster.connection(database));
  try {
    await client.ready();
    await forger.connect();
    // A worker waiting on `mail` (one long-poll, for the whole run).
    const polling = client.reserve({ queues: ['mail'], maxJobs: 1, waitMs: 30_000 }).catch(() => {});
    await sleep(1_000);
    const idleStart = await idleCpu(serve.pid);
    const idleMs = performance.now();
    await sleep(2_000);
    const idleUsPerMs = (cpuMicros([serve.pid]) - idleStart) / (performance.now() - idleMs);
    const payloads = Array.from({ length: signals }, (_, i) =>
      JSON.stringify({ s: 'forged', q: shape === 'made-up' ? `made-up-${i}` : 'mail', n: 1 }),
    );
    const before = cpuMicros([serve.pid]);
    const t0 = performance.now();
    await forger.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [`sepp_${schema}`, payloads]);
    const after = await idleCpu(serve.pid);
    const cpuMs = (after - before - idleUsPerMs * (performance.now() - t0)) / 1000;
    void polling;
    return { cpuMs, load: `${loadBefore}–${loadavg()[0]?.toFixed(1)}` };
  } finally {
    await forger.end().catch(() => {});
    await client.close();
    await serve.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const figures = new Map<string, { cpuMs: number[]; loads: string[] }>();
for (let run = 0; run < runs; run++) {
  for (const shape of shapes) {
    for (const { label, srcDir } of checkouts) {
      const key = `${label}\t${shape}`;
      const found = figures.get(key) ?? { cpuMs: [], loads: [] };
      const { cpuMs, load } = await runOnce(srcDir, shape);
      found.cpuMs.push(cpuMs);
      found.loads.push(load);
      figures.set(key, found);
      console.error(`run ${run + 1} ${label} ${shape}: ${cpuMs.toFixed(0)} ms CPU (load ${load})`);
    }
  }
}
await cluster.close();

console.log(
  `\n${signals} forged "jobs ready" NOTIFYs in one statement; server CPU until idle, less idle; median of ${runs}\n`,
);
console.log('| checkout | signals for | server CPU ms (median) | runs (ms) | load (1 min) |');
console.log('| -------- | ----------- | ---------------------- | --------- | ------------ |');
for (const [key, { cpuMs, loads }] of figures) {
  const [label, shape] = key.split('\t');
  console.log(
    `| ${label} | ${shape} | ${median(cpuMs).toFixed(0)} | ${cpuMs.map((ms) => ms.toFixed(0)).join(', ')} | ${loads.join(' ')} |`,
  );
}
