/**
 * Admin API latency with 1,000,000 jobs stored (SPEC §7: every page's API ≤ 100 ms p95).
 *
 * Fills a fresh database through the engine — four queues, several job types, jobs in
 * every state — then calls every API route through app.request() (the whole Hono stack:
 * security headers, session, CSRF, JSON) and prints p50/p95/max per route.
 *
 * Usage: npx tsx bench/admin-1m.ts [--jobs 1000000] [--samples 200] [--out bench/results/admin-1m.txt]
 */

import { scryptSync } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createAdminApp } from '../src/admin/app.ts';
import { hashPassword } from '../src/admin/password.ts';
import { RateHistory } from '../src/admin/rate-history.ts';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions, defaultQueueSettings } from '../src/engine/settings.ts';
import type { EnqueueRequest } from '../src/engine/types.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { measureBrowse } from './admin-1m-browse.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const totalJobs = Number(option('jobs', '1000000'));
const samples = Number(option('samples', '200'));
const outFile = option('out', '');

const queues = [
  {
    name: 'emails',
    share: 0.4,
    types: ['send_welcome', 'send_receipt', 'send_digest', 'send_reset', 'send_invite'],
  },
  { name: 'webhooks', share: 0.3, types: ['deliver', 'retry_delivery', 'verify_endpoint'] },
  { name: 'reports', share: 0.2, types: ['daily', 'weekly', 'monthly', 'adhoc'] },
  { name: 'images', share: 0.1, types: ['resize', 'thumbnail'] },
];

const log = (text: string) => process.stderr.write(`${text}\n`);

/** Fills the database; returns what is stored, by state. */
async function fill(engine: Engine): Promise<string> {
  const payload = Buffer.alloc(256, 'x');
  const started = performance.now();
  let made = 0;
  // Acks below delete about 6 % of what is enqueued (all queues but reports): enqueue that
  // much more, so that at least `totalJobs` stay stored.
  const enqueueTotal = Math.ceil(totalJobs / 0.935);
  for (const q of queues) {
    const count = Math.round(enqueueTotal * q.share);
    for (let base = 0; base < count; base += 4000) {
      const batches: Promise<unknown>[] = [];
      for (let b = 0; b < 4 && base + b * 1000 < count; b++) {
        const jobs: EnqueueRequest[] = [];
        for (let i = base + b * 1000; i < Math.min(count, base + (b + 1) * 1000); i++) {
          jobs.push({
            queue: q.name,
            type: q.types[i % q.types.length]!,
            payload,
            contentType: 'application/json',
            priority: i % 10,
            // Half the jobs get one attempt, so a failed one dies of attempts_exhausted.
            maxAttempts: i % 2 === 0 ? 1 : 5,
            // 15 % scheduled for later; 1 % carry an idempotency key.
            ...(i % 100 < 15 ? { delayMs: 3_600_000 + (i % 1000) * 1000 } : {}),
            ...(i % 100 === 42 ? { idempotencyKey: `${q.name}-key-${i}` } : {}),
            ...(i % 7 === 0 ? { metadata: { tenant: `t${i % 50}` } } : {}),
          });
        }
        batches.push(engine.enqueueBatch(jobs));
      }
      await Promise.all(batches);
      made += Math.min(4000, count - base);
      if (made % 100_000 < 4000) log(`  enqueued ${made.toLocaleString('en-US')}`);
    }
  }
  log(
    `enqueued ${made.toLocaleString('en-US')} jobs in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  // Workers: lease some, dead-letter some (two reasons), complete some (reports keeps completed jobs).
  for (const q of queues) {
    const leaseTotal = Math.round(enqueueTotal * q.share * 0.25);
    let leasedSoFar = 0;
    while (leasedSoFar < leaseTotal) {
      const jobs = await engine.reserve({ queues: [q.name], maxJobs: 1000, leaseMs: 12 * 3_600_000 });
      leasedSoFar += jobs.length;
      // Of each 1,000 leased: 200 dead-lettered by their worker, 200 failed (dead when that was
      // their only attempt, else retried tomorrow), 300 acked, 300 stay leased.
      await Promise.all(
        jobs.map((job, i) => {
          if (i < 200) {
            const error = `HTTP 500 from upstream (attempt ${job.attempt})`;
            return engine.nack({
              jobId: job.id,
              attempt: job.attempt,
              error,
              directive: { kind: 'dead_letter' },
            });
          }
          if (i < 400) {
            const directive = { kind: 'delay', delayMs: 86_400_000 } as const;
            return engine.nack({
              jobId: job.id,
              attempt: job.attempt,
              error: 'timeout after 30 s',
              directive,
            });
          }
          if (i < 700) return engine.ack({ jobId: job.id, attempt: job.attempt });
          return undefined;
        }),
      );
      if (jobs.length === 0) break;
    }
  }
  const counts = await engine.listQueues();
  const sum = (state: 'ready' | 'scheduled' | 'leased' | 'completed' | 'dead') =>
    counts.reduce((n, q) => n + q.counts[state], 0);
  const states = ['ready', 'scheduled', 'leased', 'completed', 'dead'] as const;
  const total = states.reduce((n, state) => n + sum(state), 0);
  const byState = states.map((state) => `${state} ${sum(state).toLocaleString('en-US')}`).join(', ');
  const stored = `${total.toLocaleString('en-US')} jobs stored (${byState}) in ${counts.length} queues`;
  log(stored);
  return stored;
}

interface Row {
  route: string;
  case: string;
  p50: number;
  p95: number;
  max: number;
  n: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-admin-bench-'));
  const dataDir = join(dir, 'data');
  const options = defaultEngineOptions();
  // reports keeps acked jobs as `completed` for a day, so that state has rows too.
  options.queues = { reports: { ...defaultQueueSettings, completedRetentionMs: 86_400_000 } };
  const rates = new RateHistory(systemClock);
  const engine = await Engine.open(openSqliteStore(dataDir, { durability: 'relaxed' }), options, {
    clock: systemClock,
    onEvent: (e) => rates.record(e),
  });
  const stored = await fill(engine);

  const password = 'bench-password';
  const { app } = await createAdminApp({
    engine,
    clock: systemClock,
    users: [{ name: 'admin', role: 'admin', passwordHash: await hashPassword(password) }],
    open: false,
    sessionTtlMs: 3_600_000,
    tls: false,
    serverInfo: () => ({
      version: 'bench',
      commit: null,
      startedAtMs: Date.now(),
      durability: 'relaxed',
      dbBytes: statSync(join(dataDir, 'sepp.db')).size,
      walBytes: statSync(join(dataDir, 'sepp.db-wal'), { throwIfNoEntry: false })?.size ?? 0,
      store: engine.storeDescription(),
      identity: {
        hostName: 'bench',
        instanceId: 'bench',
        pid: process.pid,
        grpcAddress: '',
        adminAddress: '',
        httpAddress: null,
      },
    }),
    rates,
    effectiveConfig: () => ({ server: { durability: 'relaxed' } }),
    assets: null,
  });

  let cookie = '';
  let csrf = '';
  const call = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> => {
    const headers: Record<string, string> = { cookie, origin: 'http://localhost' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET') headers['x-csrf-token'] = csrf;
    const res = await app.request(path, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const set = res.headers.get('set-cookie');
    if (set?.startsWith('sepp_session=') && !set.startsWith('sepp_session=;')) cookie = set.split(';')[0]!;
    return { status: res.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
  };

  const rows: Row[] = [];
  /** Times `n` calls; `request(i)` makes the i-th. Every answer must have the expected status. */
  const measure = async (
    route: string,
    label: string,
    n: number,
    request: (i: number) => Promise<{ status: number }>,
    ok = 200,
  ) => {
    // Warm up reads only: a mutation's warm-up would use up the jobs its samples act on.
    if (route.startsWith('GET')) for (let i = 0; i < Math.min(5, n); i++) await request(i);
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const { status } = await request(i);
      times.push(performance.now() - t0);
      if (status !== ok) throw new Error(`${route} (${label}) answered ${status}`);
    }
    times.sort((a, b) => a - b);
    rows.push({
      route,
      case: label,
      p50: percentile(times, 50),
      p95: percentile(times, 95),
      max: times.at(-1) ?? 0,
      n,
    });
    log(`  ${route} ${label}: p95 ${percentile(times, 95).toFixed(2)} ms`);
  };

  // Log in (scrypt with the production parameters is the cost here, on purpose).
  await measure('POST /api/v1/session', 'login, scrypt ln=15', 20, () =>
    call('POST', '/api/v1/session', { user: 'admin', password }),
  );
  csrf = ((await call('GET', '/api/v1/session')).json as { csrfToken: string }).csrfToken;

  const n = samples;
  await measure('GET /api/v1/session', '', n, () => call('GET', '/api/v1/session'));
  await measure('GET /api/v1/overview', '4 queues, rates', n, () => call('GET', '/api/v1/overview'));
  await measure('GET /api/v1/queues', '', n, () => call('GET', '/api/v1/queues'));
  await measure('GET /api/v1/queues/{queue}', '', n, (i) =>
    call('GET', `/api/v1/queues/${queues[i % 4]!.name}`),
  );

  const states = ['ready', 'scheduled', 'leased', 'dead', 'completed'] as const;
  await measure('GET /api/v1/queues/{queue}/jobs', 'first page, each state', n, (i) =>
    call('GET', `/api/v1/queues/${queues[i % 4]!.name}/jobs?state=${states[i % 5]}&limit=50`),
  );
  await measure('GET /api/v1/queues/{queue}/jobs', 'newest first', n, (i) =>
    call('GET', `/api/v1/queues/${queues[i % 4]!.name}/jobs?state=ready&order=newest_first&limit=50`),
  );
  await measure('GET /api/v1/queues/{queue}/jobs', 'type filter', n, (i) =>
    call('GET', `/api/v1/queues/emails/jobs?state=ready&type=${queues[0]!.types[i % 5]}&limit=50`),
  );
  await measure('GET /api/v1/queues/{queue}/jobs', 'deep cursor (seq ~500k)', n, (i) => {
    const cursor = Buffer.from(`s${400_000 + i * 1000}`).toString('base64url');
    return call('GET', `/api/v1/queues/emails/jobs?state=ready&limit=50&cursor=${cursor}`);
  });
  let next: string | null = null;
  await measure('GET /api/v1/queues/{queue}/jobs', 'following nextCursor', n, async () => {
    const reply = await call(
      'GET',
      `/api/v1/queues/webhooks/jobs?state=scheduled&limit=100${next ? `&cursor=${next}` : ''}`,
    );
    next = (reply.json as { nextCursor: string | null }).nextCursor;
    return reply;
  });
  await measure('GET /api/v1/queues/{queue}/jobs', 'limit 1000', 50, () =>
    call('GET', '/api/v1/queues/emails/jobs?state=ready&limit=1000'),
  );

  const ready = (await call('GET', '/api/v1/queues/emails/jobs?state=ready&limit=1000')).json as {
    items: { id: string }[];
  };
  const ids = ready.items.map((j) => j.id);
  await measure('GET /api/v1/jobs/{id}', '', n, (i) => call('GET', `/api/v1/jobs/${ids[i % ids.length]}`));
  await measure('GET /api/v1/queues/{queue}/idempotency-keys/{key}', '', n, (i) =>
    call('GET', `/api/v1/queues/emails/idempotency-keys/emails-key-${42 + 100 * (i % 80)}`),
  );
  await measure('GET /api/v1/queues/{queue}/dead-letters', 'any reason', n, (i) =>
    call(
      'GET',
      `/api/v1/queues/${queues[i % 4]!.name}/dead-letters?limit=50&order=${i % 2 ? 'newest_first' : 'oldest_first'}`,
    ),
  );
  await measure('GET /api/v1/queues/{queue}/dead-letters', 'by reason', n, (i) =>
    call('GET', `/api/v1/queues/${queues[i % 4]!.name}/dead-letters?reason=dead_lettered&limit=50`),
  );
  await measure('GET /api/v1/queues/{queue}/dead-letters', 'reason with none', n, () =>
    call('GET', '/api/v1/queues/emails/dead-letters?reason=lease_expired&limit=50'),
  );

  await measureBrowse(
    measure,
    call,
    n,
    queues.map((q) => q.name),
  );

  // Mutations (each audited in the same transaction).
  await measure('POST /api/v1/queues/{queue}/pause', '', n, (i) =>
    call('POST', `/api/v1/queues/${queues[i % 4]!.name}/pause`, {}),
  );
  await measure('POST /api/v1/queues/{queue}/resume', '', n, (i) =>
    call('POST', `/api/v1/queues/${queues[i % 4]!.name}/resume`, {}),
  );
  await measure('POST /api/v1/queues/{queue}/jobs', 'enqueue', n, (i) =>
    call('POST', '/api/v1/queues/images/jobs', {
      type: 'resize',
      payload: `{"image":${i}}`,
      contentType: 'application/json',
    }),
  );
  await measure('POST /api/v1/jobs/{id}/dead-letter', '', n, (i) =>
    call('POST', `/api/v1/jobs/${ids[i]}/dead-letter`, {}),
  );
  await measure('POST /api/v1/jobs/{id}/requeue', 'dead → ready', n, (i) =>
    call('POST', `/api/v1/jobs/${ids[i]}/requeue`, {}),
  );
  await measure('POST /api/v1/jobs/{id}/cancel', '', n, (i) =>
    call('POST', `/api/v1/jobs/${ids[n + i]}/cancel`, {}),
  );
  const deadPage = async (queue: string) =>
    (
      (await call('GET', `/api/v1/queues/${queue}/dead-letters?limit=1000`)).json as {
        items: { id: string }[];
      }
    ).items.map((j) => j.id);
  const deadIds = await deadPage('webhooks');
  const selections = Math.min(50, Math.floor(deadIds.length / 20));
  const selection = (k: number) => deadIds.slice(k * 10, k * 10 + 10);
  await measure('POST /api/v1/queues/{queue}/dead-letters/requeue', '10 selected', selections, (i) =>
    call('POST', '/api/v1/queues/webhooks/dead-letters/requeue', { jobIds: selection(i) }),
  );
  await measure('POST /api/v1/queues/{queue}/dead-letters/delete', '10 selected', selections, (i) =>
    call('POST', '/api/v1/queues/webhooks/dead-letters/delete', { jobIds: selection(selections + i) }),
  );
  await measure('GET /api/v1/audit', 'newest', n, () => call('GET', '/api/v1/audit?limit=50'));
  await measure('GET /api/v1/audit', 'filtered', n, (i) =>
    call(
      'GET',
      `/api/v1/audit?${['actor=admin', 'action=job.cancel', 'target=queue:emails'][i % 3]}&limit=50`,
    ),
  );
  await measure('GET /api/v1/config', '', n, () => call('GET', '/api/v1/config'));
  await measure('GET /api/openapi.json', '', n, () => call('GET', '/api/openapi.json'));

  // Bulk changes run in chunks of 5,000 jobs per transaction: time grows with the jobs changed.
  const bulk: string[] = [];
  const time = async (label: string, fn: () => Promise<{ status: number; json: unknown }>) => {
    const t0 = performance.now();
    const reply = await fn();
    if (reply.status !== 200) throw new Error(`${label} answered ${reply.status}`);
    bulk.push(`${label}: ${(performance.now() - t0).toFixed(0)} ms → ${JSON.stringify(reply.json)}`);
  };
  await time('requeue-all dead letters of images (reason dead_lettered)', () =>
    call('POST', '/api/v1/queues/images/dead-letters/requeue-all', { reason: 'dead_lettered' }),
  );
  await time('delete-all dead letters of reports', () =>
    call('POST', '/api/v1/queues/reports/dead-letters/delete-all', { confirm: 'reports' }),
  );
  await time('purge images (ready + scheduled)', () =>
    call('POST', '/api/v1/queues/images/purge', { confirm: 'images' }),
  );
  await measure('DELETE /api/v1/session', 'logout', 1, () => call('DELETE', '/api/v1/session'));

  // What one password check costs on this machine right now, for comparison with login.
  const scryptMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    scryptSync('x', Buffer.alloc(16), 64, { N: 2 ** 15, r: 8, p: 1, maxmem: 2 ** 26 });
    scryptMs.push(performance.now() - t0);
  }
  scryptMs.sort((a, b) => a - b);
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  const dbBytes = statSync(join(dataDir, 'sepp.db')).size;
  engine.close();
  rmSync(dir, { recursive: true, force: true });

  const header = `| route | case | p50 ms | p95 ms | max ms | n |\n|---|---|---:|---:|---:|---:|`;
  const table = rows
    .map(
      (r) =>
        `| ${r.route} | ${r.case} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} | ${r.max.toFixed(2)} | ${r.n} |`,
    )
    .join('\n');
  const worst = rows
    .filter((r) => !r.route.startsWith('POST /api/v1/session'))
    .reduce((a, b) => (b.p95 > a.p95 ? b : a));
  const report = [
    `# Admin API latency with ${totalJobs.toLocaleString('en-US')} jobs stored`,
    '',
    `Measured with ${stored}.`,
    '',
    `Command: npx tsx bench/admin-1m.ts --jobs ${totalJobs} --samples ${samples}`,
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM (${(freemem() / 2 ** 30).toFixed(0)} GiB free), Node ${process.version}, ${process.platform}`,
    `Date: ${new Date().toISOString()}; database ${(dbBytes / 2 ** 20).toFixed(0)} MiB, durability relaxed (reads do not fsync; mutations commit through the group committer).`,
    'Each call goes through app.request(): security headers, session cookie, CSRF check, JSON.',
    '',
    header,
    table,
    '',
    `Slowest p95 apart from login: ${worst.route} (${worst.case}) ${worst.p95.toFixed(2)} ms — target ≤ 100 ms.`,
    `Login is dominated by scrypt (N=2^15, r=8), deliberately slow: one scrypt alone took ${scryptMs[2]!.toFixed(0)} ms (median of 5) during this run.`,
    `Load average at the end of the run: ${load} (other work shared these ${cpus().length} cores; the p95 column includes that scheduling noise, the p50 column mostly not).`,
    '',
    'Bulk changes (chunks of 5,000 jobs per transaction; not page loads):',
    ...bulk.map((b) => `- ${b}`),
    '',
  ].join('\n');
  process.stdout.write(report);
  if (outFile !== '') writeFileSync(outFile, report);
}

await main();
