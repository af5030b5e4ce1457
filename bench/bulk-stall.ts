/**
 * Whether bulk operations keep the server serving (issue 29 item 4, issue 36
 * item 1): starts `sepp serve`, fills one queue with `--jobs` matching jobs
 * (default 300,000), and runs each bulk operation over all of them while a
 * second connection sends unary gRPC Enqueues, one at a time, to another
 * queue. Prints, per operation, how long it took (as its caller waited for it)
 * and the concurrent enqueues' latency (p50, p99, max) during it, beside the
 * same enqueues with no bulk operation running.
 *
 *   npx tsx bench/bulk-stall.ts [--jobs 300000] [--runs 1] [--against DIR] [--ops update,cancel]
 *   npx tsx bench/bulk-stall.ts --jobs 200000 --runs 3 --ops admin-cancel,admin-requeue
 *
 * The operations, in order on the same jobs: UpdateJobs run-now (scheduled →
 * ready), UpdateJobs priority, CancelJobs, RequeueJobs (the cancelled jobs),
 * DeleteJobs by a metadata value (a filter no index answers), then a refill
 * and PurgeQueue. `--against DIR` runs the same against the server of another
 * checkout (say /work/main), interleaved; operations that server lacks are
 * left out of its rows; the order alternates run by run. Not a test: the target (p99 < 50 ms) is read off the
 * table, never asserted. `--ops` runs only the operations named (update,
 * priority, cancel, requeue, delete, purge; a refill runs before each when
 * needed). `admin-cancel` and `admin-requeue` are the admin UI's own route,
 * the one its "Cancel all matching" / "Requeue all matching" buttons call:
 * logged in as the UI is (session cookie, CSRF token), `POST /api/v1/bulk/cancel`
 * (then `…/requeue` of the cancelled jobs) starts the operation in the
 * background and its progress is polled every 500 ms
 * (`GET /api/v1/bulk-operations/{id}`) as the page polls it, until it ends;
 * the enqueues are measured over that whole time. Each row also shows the 1-minute load average at the
 * operation's start and end: the machine is shared.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentials, status } from '@grpc/grpc-js';
import type { JobFilter } from '../clients/typescript/src/gen/sepp/v1/admin.js';
import { EnqueueJob, JobState } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { hashPassword } from '../src/admin/password.ts';
import { parseArgs } from './engine-lib.ts';
import type { LatencySummary } from './lib/latency.ts';
import { waitForPort } from './lib/net.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { startSeppServe } from './lib/sepp-serve.ts';
import { probeEnqueues, unary } from './lib/unary-probe.ts';

const args = parseArgs(process.argv.slice(2));
const jobs = Number(args.get('jobs') ?? 300_000);
const runs = Number(args.get('runs') ?? 1);
const allOps = [
  'update',
  'priority',
  'cancel',
  'requeue',
  'admin-cancel',
  'admin-requeue',
  'delete',
  'purge',
] as const;
const ops = new Set(args.has('ops') ? String(args.get('ops')).split(',') : allOps);
for (const op of ops) {
  if (!(allOps as readonly string[]).includes(op))
    throw new Error(`--ops: unknown ${op}; one of ${allOps.join(',')}`);
}
const root = new URL('..', import.meta.url).pathname;
const checkouts = [
  { label: 'this checkout', dir: root },
  ...(args.has('against') ? [{ label: String(args.get('against')), dir: String(args.get('against')) }] : []),
];

const queue = 'bulk';
const filter: JobFilter = {
  queue,
  type: '',
  states: [],
  group: '',
  allQueues: false,
  typePrefix: '',
  errorText: '',
  metadataKey: '',
  metadataValue: '',
  enqueuedFromMs: 0,
  enqueuedBeforeMs: 0,
  deadReason: 0,
  retriesOnly: false,
};

/** A job of `q`; `fields` overrides, every other field at its default. */
function job(q: string, fields: Partial<EnqueueJob> = {}): EnqueueJob {
  return EnqueueJob.fromPartial({
    queue: q,
    type: 'report',
    payload: Buffer.alloc(64, 0x61),
    metadata: { tenant: 'acme' },
    ...fields,
  });
}

/** The admin UI's session: its cookie and CSRF token, as the page sends them. */
class AdminSession {
  private cookie = '';
  private csrf = '';
  constructor(private readonly origin: string) {}

  async login(user: string, password: string): Promise<void> {
    const reply = await this.call('POST', '/api/v1/session', { user, password });
    this.csrf = String((reply as { csrfToken?: string }).csrfToken ?? '');
  }

  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.origin}${path}`, {
      method,
      headers: {
        ...(this.cookie === '' ? {} : { cookie: this.cookie }),
        ...(method === 'POST' ? { origin: this.origin, 'x-csrf-token': this.csrf } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const setCookie = response.headers.get('set-cookie');
    if (setCookie !== null) this.cookie = setCookie.split(';')[0] ?? '';
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
    return answer;
  }

  /** Starts a bulk operation as the UI does and polls it every 500 ms until it ends; answers how many changed. */
  async bulk(action: 'cancel' | 'requeue', body: Record<string, unknown>): Promise<number> {
    let op = await this.call('POST', `/api/v1/bulk/${action}`, body);
    while (op.state === 'running') {
      await sleep(500);
      op = await this.call('GET', `/api/v1/bulk-operations/${String(op.id)}`);
    }
    if (op.state !== 'done') throw new Error(`bulk ${action} ended ${String(op.state)}: ${String(op.error)}`);
    return Number(op.changed);
  }
}

async function fill(client: QueueServiceClient, scheduled: boolean): Promise<void> {
  const schedule = scheduled ? { $case: 'delayMs' as const, value: 3_600_000 } : undefined;
  const batch = Array.from({ length: 1000 }, () => job(queue, { schedule }));
  for (let n = 0; n < jobs; n += 1000) {
    await unary(client, client.enqueueBatch, { jobs: batch.slice(0, Math.min(1000, jobs - n)) });
  }
}

interface Row {
  checkout: string;
  operation: string;
  changed: number;
  durationMs: number;
  enqueue: LatencySummary | undefined;
  /** The 1-minute load average at the start and at the end. */
  load: [number, number];
}

async function measure(
  checkout: string,
  probeClient: QueueServiceClient,
  operation: string,
  run: () => Promise<number>,
): Promise<Row> {
  const loadBefore = loadavg()[0] ?? 0;
  const started = performance.now();
  const done = run();
  const [changed, enqueue] = await Promise.all([
    done,
    probeEnqueues(probeClient, done, job('probe', { metadata: {} })),
  ]);
  const load: [number, number] = [loadBefore, loadavg()[0] ?? 0];
  return { checkout, operation, changed, durationMs: performance.now() - started, enqueue, load };
}

async function oneServer(label: string, srcDir: string): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bulk-bench-'));
  const config = join(dir, 'sepp.toml');
  const password = 'bulk-stall-bench-password';
  writeFileSync(
    config,
    `[[admin.users]]\nname = "bench"\nrole = "admin"\npassword_hash = "${await hashPassword(password)}"\n`,
  );
  const server = await startSeppServe({ srcDir, config, dir });
  const address = `127.0.0.1:${server.grpcPort}`;
  const control = new QueueServiceClient(address, credentials.createInsecure());
  const prober = new QueueServiceClient(address, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  });
  const admin = new AdminSession(`http://127.0.0.1:${server.adminPort}`);
  if ([...ops].some((op) => op.startsWith('admin-'))) {
    await waitForPort(server.adminPort, 30_000);
    await admin.login('bench', password);
  }
  const rows: Row[] = [];
  const step = async (op: (typeof allOps)[number], operation: string, run: () => Promise<number>) => {
    if (!ops.has(op)) return;
    try {
      const row = await measure(label, prober, operation, run);
      rows.push(row);
      process.stderr.write(
        `${label}: ${operation} ${row.changed} jobs in ${Math.round(row.durationMs)} ms, enqueue p99 ${row.enqueue?.p99Ms.toFixed(1)} ms, load ${row.load.map((l) => l.toFixed(2)).join('→')}\n`,
      );
    } catch (error) {
      if ((error as { code?: number }).code !== status.UNIMPLEMENTED) throw error;
      process.stderr.write(`${label}: ${operation} not implemented there\n`);
    }
  };
  try {
    rows.push(
      await measure(
        label,
        prober,
        'none (baseline, 3 s)',
        () => new Promise((r) => setTimeout(() => r(0), 3000)),
      ),
    );
    // Every operation but the purge starts from scheduled jobs (the run-now makes them ready).
    if ([...ops].some((op) => op !== 'purge')) await fill(control, true);
    const runNow = { scheduleChange: { $case: 'runNow' as const, value: true } };
    const prio = { priorityChange: { $case: 'priority' as const, value: 5 } };
    await step(
      'update',
      'UpdateJobs run now',
      async () =>
        (
          await unary(control, control.updateJobs, {
            requestKey: '',
            filter,
            changes: runNow,
            dryRun: false,
            background: false,
          })
        ).updatedCount,
    );
    await step(
      'priority',
      'UpdateJobs priority',
      async () =>
        (
          await unary(control, control.updateJobs, {
            requestKey: '',
            filter,
            changes: prio,
            dryRun: false,
            background: false,
          })
        ).updatedCount,
    );
    await step('cancel', 'CancelJobs', async () => {
      const r = await unary(control, control.cancelJobs, {
        requestKey: '',
        filter,
        dryRun: false,
        background: false,
      });
      return r.cancelledCount + r.cancelRequestedCount;
    });
    await step(
      'requeue',
      'RequeueJobs (cancelled)',
      async () =>
        (
          await unary(control, control.requeueJobs, {
            requestKey: '',
            filter: { ...filter, states: [JobState.CANCELLED] },
            dryRun: false,
            background: false,
          })
        ).requeuedCount,
    );
    await step('admin-cancel', 'POST /api/v1/bulk/cancel (admin UI), polled', () =>
      admin.bulk('cancel', { queue }),
    );
    await step('admin-requeue', 'POST /api/v1/bulk/requeue (admin UI, cancelled), polled', () =>
      admin.bulk('requeue', { queue, state: 'cancelled' }),
    );
    await step(
      'delete',
      'DeleteJobs by metadata',
      async () =>
        (
          await unary(control, control.deleteJobs, {
            requestKey: '',
            filter: { ...filter, metadataKey: 'tenant', metadataValue: 'acme' },
            dryRun: false,
            background: false,
          })
        ).deletedCount,
    );
    // What a server without RequeueJobs/DeleteJobs still holds is cancelled: purge needs waiting jobs.
    if (ops.has('purge')) await fill(control, false);
    await step(
      'purge',
      'PurgeQueue',
      async () =>
        (await unary(control, control.purgeQueue, { requestKey: '', queue, background: false })).deletedCount,
    );
  } finally {
    control.close();
    prober.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

installCleanupHandlers(async () => {});
const all: Row[] = [];
for (let run = 0; run < runs; run++) {
  // The order alternates run by run, so that neither checkout always meets the machine's load first.
  const order = run % 2 === 0 ? checkouts : [...checkouts].reverse();
  for (const { label, dir } of order) all.push(...(await oneServer(label, dir)));
}

/** Median of the runs' rows of one checkout and operation. */
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const keys = [...new Set(all.map((r) => `${r.checkout}\u0000${r.operation}`))];
console.log(
  `bulk operations over ${jobs.toLocaleString('en')} matching jobs; medians of ${runs} run(s), checkouts interleaved; ${cpus().length} CPUs`,
);
console.log(
  '| checkout | operation | jobs changed | duration | enqueues during it | enqueue p50 | enqueue p99 | enqueue max | p99 of each run | load (1 min) |',
);
console.log('|---|---|--:|--:|--:|--:|--:|--:|---|---|');
for (const key of keys) {
  const [checkout, operation] = key.split('\u0000');
  const rows = all.filter((r) => r.checkout === checkout && r.operation === operation);
  const pick = (f: (r: Row) => number) => median(rows.map(f));
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  console.log(
    `| ${checkout} | ${operation} | ${pick((r) => r.changed).toLocaleString('en')} | ${(pick((r) => r.durationMs) / 1000).toFixed(1)} s | ${pick((r) => r.enqueue?.count ?? 0)} | ${ms(pick((r) => r.enqueue?.p50Ms ?? 0))} | ${ms(pick((r) => r.enqueue?.p99Ms ?? 0))} | ${ms(pick((r) => r.enqueue?.maxMs ?? 0))} | ${rows.map((r) => (r.enqueue?.p99Ms ?? 0).toFixed(0)).join(', ')} | ${Math.min(...rows.flatMap((r) => r.load)).toFixed(1)}–${Math.max(...rows.flatMap((r) => r.load)).toFixed(1)} |`,
  );
}
process.exit(0);
