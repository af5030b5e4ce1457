/**
 * Load: 1,000 workers long-polling at once plus producers, for a bounded time
 * (3 s in `npm test`; SEPP_LOAD_SECONDS=60 in `npm run test:long`). No errors, every
 * enqueued job delivered exactly once and acked, p99 enqueue-to-delivery
 * latency and server RSS reported, RSS bounded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { startServerProcess } from '../helpers/process-server.ts';
import { call, testJob } from '../helpers/server.ts';

// 3 s: every worker is long-polling before producing starts (asserted), so a short window
// already sends the producers' jobs to 1,000 waiting long-polls; test:long runs 60 s.
const seconds = Number(process.env.SEPP_LOAD_SECONDS ?? 3);
const workers = 1000;
const producers = 20;
const channels = 10;

test(`${workers} long-polling workers and ${producers} producers for ${seconds} s`, {
  timeout: (seconds + 120) * 1000,
}, async () => {
  const t0 = performance.now();
  const phases: string[] = [];
  const phase = (name: string) => phases.push(`${name} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // Printed even when the test times out: where the time went.
  process.on('exit', () => console.log(`load phases: ${phases.join(', ')}`));
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-load-'));
  const server = await startServerProcess(dataDir);
  phase('started');
  // Separate connections, as separate worker processes would have (grpc-js shares one per target otherwise).
  const clients = Array.from(
    { length: channels },
    () =>
      new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
      }),
  );
  const errors: string[] = [];
  const sentAt = new Map<string, number>();
  const latenciesMs: number[] = [];
  const delivered = new Set<string>();
  let peakRss = 0;
  let waitingPeak = 0;
  let stop = false;
  let deadline = Number.POSITIVE_INFINITY;
  const record = (e: unknown) => {
    const se = e as ServiceError;
    errors.push(`${se.code}: ${se.details ?? String(e)}`);
  };
  try {
    const worker = async (i: number) => {
      const c = clients[i % channels]!;
      while (!stop) {
        try {
          const { jobs } = await call(c, c.reserve, {
            maxResponseBytes: 0,
            queues: ['load'],
            maxJobs: 1,
            leaseDurationMs: 30_000,
            // The longest wait the server allows (limits.max_wait_ms): an idle long-poll costs nothing.
            // With 1 s waits, 1,000 idle workers made 1,000 calls a second, and on a loaded 2-core
            // machine (load 13) that churn alone took 200 s before all were waiting and left the
            // producers 70 enqueues in 5 s.
            waitTimeoutMs: 60_000,
            workerId: `w${i}`,
          });
          for (const j of jobs) {
            const payloadId = j.payload.toString();
            latenciesMs.push(performance.now() - (sentAt.get(payloadId) ?? Number.NaN));
            if (delivered.has(payloadId)) errors.push(`delivered twice: ${payloadId}`);
            delivered.add(payloadId);
            await call(c, c.ack, { jobId: j.jobId, attempt: j.attempt });
          }
        } catch (e) {
          // A reserve sent just before the shutdown may find the connection gone: that is the test ending.
          if (!stop) record(e);
        }
      }
    };
    let produced = 0;
    const producer = async (i: number) => {
      const c = clients[i % channels]!;
      while (Date.now() < deadline && !stop) {
        const id = `p${i}-${produced++}`;
        sentAt.set(id, performance.now());
        try {
          await call(c, c.enqueue, {
            job: testJob('load', { payload: Buffer.from(id) }),
          });
        } catch (e) {
          record(e);
          sentAt.delete(id);
        }
        // Producers are paced so the workers, not the producers, are mostly waiting.
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, server.rssBytes());
      void call(clients[0]!, clients[0]!.listQueues, { pageSize: 0, pageToken: '' }).then(({ queues }) => {
        waitingPeak = Math.max(waitingPeak, queues.find((q) => q.name === 'load')?.waitingWorkers ?? 0);
      }, record);
    }, 250);
    // Resuming with allowMissing creates the queue, so ListQueues reports its waiting workers from the start.
    await call(clients[0]!, clients[0]!.resumeQueue, { queue: 'load', allowMissing: true });
    const workerRuns = Array.from({ length: workers }, (_, i) => worker(i));
    // Producing starts once the workers are all waiting (on a busy machine 1,000 calls take a while to arrive).
    for (let i = 0; i < 600 && waitingPeak < workers; i++) await new Promise((r) => setTimeout(r, 100));
    phase(`waiting ${waitingPeak}`);
    deadline = Date.now() + seconds * 1000;
    await Promise.all(Array.from({ length: producers }, (_, i) => producer(i)));
    phase('produced');
    // Let the workers drain what is left, then stop them (their waits end when the server shuts down).
    for (let i = 0; i < 200 && delivered.size < sentAt.size; i++) await new Promise((r) => setTimeout(r, 50));
    phase(`drained ${delivered.size}/${sentAt.size}`);
    stop = true;
    clearInterval(sampler);
    // A graceful shutdown answers every waiting long-poll at once.
    const exitCode = await server.stop('SIGTERM');
    phase('stopped');
    await Promise.all(workerRuns);
    phase('workers done');
    assert.equal(exitCode, 0, 'graceful shutdown under load');
    latenciesMs.sort((a, b) => a - b);
    const p = (q: number) =>
      latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))]?.toFixed(1);
    console.log(
      `load: ${sentAt.size} jobs in ${seconds} s, ${delivered.size} delivered, long-polls waiting at peak ${waitingPeak}, ` +
        `enqueue→delivery p50 ${p(0.5)} ms p99 ${p(0.99)} ms, server peak RSS ${Math.round(peakRss / 1048576)} MiB, errors ${errors.length}`,
    );
    assert.deepEqual(errors.slice(0, 5), []);
    assert.equal(delivered.size, sentAt.size, 'every enqueued job was delivered');
    assert.equal(waitingPeak, workers, 'every worker was long-polling at once');
    // Long-polls leave old-space garbage behind (src/cli/heap-growth.ts): at V8's default growth
    // the 60 s run peaked at 329 MiB; with sepp's limit, about 170 (bench/long-poll-memory.ts).
    assert.ok(peakRss < 250 * 1048576, `server RSS ${Math.round(peakRss / 1048576)} MiB`);
  } finally {
    for (const c of clients) c.close();
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
