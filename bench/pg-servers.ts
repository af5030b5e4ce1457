/**
 * W1 through one sepp server against two on one PostgreSQL (issue 37): each `sepp serve`
 * (this checkout's sources) in its own process on the same schema of a fresh PostgreSQL 15
 * cluster (tests/helpers/postgres.ts, fsync on). The W1 shape with its 50 producers and 50
 * workers split evenly over the servers: producers awaiting one `enqueue` each through
 * their server, then one SDK Worker per server (concurrency 50 / servers) until every job
 * is acknowledged. Runs alternate between the server counts, `--runs` times, each on a new
 * schema; prints medians of jobs/s and the CPU per job of the sepp servers and of
 * PostgreSQL, with the load average around each run.
 *
 *   npx tsx bench/pg-servers.ts --jobs 10000 --runs 3 [--servers 1,2] [--concurrency 50] [--prefetch 0]
 *                               [--against DIR] [--keep-completed]
 *
 * --prefetch N: each server's Worker holds N leased jobs beyond its slots (the SDK's `prefetch`).
 * --against DIR: the servers of the checkout DIR too (its sources), on schemas of their own in
 * the same cluster, interleaved with this checkout's run by run; a row per checkout and count.
 * --keep-completed: the queue keeps its completed jobs (`completed_retention_ms`, 1 h), so each
 * ack updates its job's row instead of deleting it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { cpuMicros } from './lib/proc-stats.ts';
import { enqueueJobs } from './lib/sdk-phases.ts';
import { type SeppServe, startSeppServe } from './lib/sepp-serve.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    servers: { type: 'string', default: '1,2' },
    concurrency: { type: 'string', default: '50' },
    prefetch: { type: 'string', default: '0' },
    against: { type: 'string' },
    'keep-completed': { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const runs = Number(values.runs);
const serverCounts = values.servers.split(',').map(Number);
const concurrency = Number(values.concurrency);
const prefetch = Number(values.prefetch);
const srcDir = new URL('..', import.meta.url).pathname;
const keptCompleted = values['keep-completed'] ? '[queues.w1]\ncompleted_retention_ms = "1h"\n' : '';
/** The checkouts measured, this one first. */
const checkouts = [
  { label: 'this', srcDir },
  ...(values.against === undefined ? [] : [{ label: values.against, srcDir: values.against }]),
];

const cluster = await startPostgres();
const database = await cluster.createDatabase('bench');
const postmaster = cluster.pid();
const pgCpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));

interface Figures {
  enqueue: number;
  drain: number;
  enqueueServerUs: number;
  drainServerUs: number;
  enqueuePgUs: number;
  drainPgUs: number;
  load: string;
}

async function runOnce(n: number, schema: string, checkout: string): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-pg-servers-'));
  const started: { serve: SeppServe; client: SeppClient }[] = [];
  const loadBefore = loadavg()[0]?.toFixed(1);
  try {
    for (let i = 0; i < n; i++) {
      const config = join(dir, `sepp-${i}.toml`);
      writeFileSync(
        config,
        `[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "${schema}"\n${keptCompleted}`,
      );
      // Started one after the other: the first migrates the schema.
      const serverDir = join(dir, `server-${i}`);
      mkdirSync(serverDir);
      const serve = await startSeppServe({ srcDir: checkout, config, dir: serverDir });
      const client = SeppClient.connect(`127.0.0.1:${serve.grpcPort}`);
      await client.ready();
      started.push({ serve, client });
    }
    const seppCpu = () => cpuMicros(started.map((s) => s.serve.pid));
    const measure = async (work: () => Promise<void>) => {
      const s0 = seppCpu();
      const p0 = pgCpu();
      const t0 = performance.now();
      await work();
      const seconds = (performance.now() - t0) / 1000;
      return { perSecond: jobs / seconds, serverUs: (seppCpu() - s0) / jobs, pgUs: (pgCpu() - p0) / jobs };
    };
    const enqueue = await measure(() =>
      Promise.all(
        started.map(({ client }, i) =>
          enqueueJobs(client, 'w1', share(jobs, n, i), Math.max(1, share(50, n, i))),
        ),
      ).then(() => undefined),
    );
    const drain = await measure(async () => {
      let done = 0;
      let finish: () => void = () => {};
      const all = new Promise<void>((resolve) => (finish = resolve));
      const workers = started.map(({ client }, i) => {
        const worker = client.worker({
          queues: ['w1'],
          concurrency: Math.max(1, share(concurrency, n, i)),
          prefetch: share(prefetch, n, i),
          handlers: { noop: () => {} },
        });
        worker.on('error', (e) => console.error('worker:', e.message));
        worker.on('completed', () => {
          if (++done === jobs) finish();
        });
        return worker;
      });
      await all;
      await Promise.all(workers.map((w) => w.close()));
    });
    return {
      enqueue: enqueue.perSecond,
      drain: drain.perSecond,
      enqueueServerUs: enqueue.serverUs,
      drainServerUs: drain.serverUs,
      enqueuePgUs: enqueue.pgUs,
      drainPgUs: drain.pgUs,
      load: `${loadBefore}–${loadavg()[0]?.toFixed(1)}`,
    };
  } finally {
    for (const { client } of started) await client.close();
    for (const { serve } of started) await serve.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Server i's part of `total` split over `n`. */
function share(total: number, n: number, i: number): number {
  return Math.floor(total / n) + (i < total % n ? 1 : 0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const results = new Map<string, Figures[]>();
try {
  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? serverCounts : [...serverCounts].reverse();
    for (const n of order) {
      for (const [c, checkout] of (r % 2 === 0 ? checkouts : [...checkouts].reverse()).entries()) {
        const key = checkouts.length === 1 ? `${n}` : `${n} (${checkout.label})`;
        const figures = await runOnce(n, `w1_${r}_${n}_${c}`, checkout.srcDir);
        results.set(key, [...(results.get(key) ?? []), figures]);
        console.log(
          `run ${r + 1}, ${key} server(s): enqueue ${Math.round(figures.enqueue)} jobs/s, drain ${Math.round(figures.drain)} jobs/s; ` +
            `sepp µs/job ${figures.enqueueServerUs.toFixed(0)} / ${figures.drainServerUs.toFixed(0)}, ` +
            `PostgreSQL µs/job ${figures.enqueuePgUs.toFixed(0)} / ${figures.drainPgUs.toFixed(0)}; load ${figures.load}`,
        );
      }
    }
  }
  console.log(
    `\nW1, ${jobs} jobs, 50 producers and ${concurrency} workers (prefetch ${prefetch}) split over the servers${keptCompleted === '' ? '' : ', completed jobs kept'}, medians of ${runs}:\n`,
  );
  console.log(
    '| servers | enqueue jobs/s | drain jobs/s | sepp CPU µs/job enq / drain | PostgreSQL CPU µs/job enq / drain |',
  );
  console.log('| ---: | ---: | ---: | --- | --- |');
  for (const [n, figures] of results) {
    const m = (f: (x: Figures) => number) => median(figures.map(f));
    console.log(
      `| ${n} | ${Math.round(m((x) => x.enqueue))} | ${Math.round(m((x) => x.drain))} | ` +
        `${m((x) => x.enqueueServerUs).toFixed(0)} / ${m((x) => x.drainServerUs).toFixed(0)} | ` +
        `${m((x) => x.enqueuePgUs).toFixed(0)} / ${m((x) => x.drainPgUs).toFixed(0)} |`,
    );
  }
} finally {
  await cluster.close();
}
