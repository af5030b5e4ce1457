/**
 * The HTTP/JSON API and push delivery against gRPC, each on a fresh server
 * (durability full), the paths interleaved within each run, medians of
 * --runs (3):
 *
 *   gRPC W1 (SDK)     50 producers, each awaiting one `enqueue` (the SDK coalesces them per turn)
 *   gRPC unary        50 callers, each awaiting one unary Enqueue (a hand-written gRPC client)
 *   HTTP keep-alive   50 clients on HTTP/1.1 keep-alive, each awaiting one POST /v1/jobs
 *   HTTP batches      the same, each POST /v1/jobs/batch carrying 50 jobs (what a client that
 *                     gathers its jobs gets, as the SDK gathers them for gRPC)
 *   push              --push-jobs jobs of a paused queue with max_leased 50, resumed: pushed
 *                     to a local receiver that answers 200 at once, until all are acked
 *
 * Every enqueue carries a 256-byte payload (base64 over HTTP). Printed: jobs/s and the
 * server's CPU per job, and HTTP's share of gRPC W1's throughput (issue 34's target:
 * at least 50 %). No assertion: the figures are for reading, with the load average.
 *
 *   npx tsx bench/http-api.ts [--runs 3] [--jobs 20000] [--push-jobs 10000]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { credentials, Metadata } from '@grpc/grpc-js';
import { EnqueueJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable, median } from './engine-lib.ts';
import { enqueueJobs, measured, type PhaseFigures } from './lib/sdk-phases.ts';
import { BenchServer } from './lib/server-process.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '20000' },
    'push-jobs': { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '50' },
  },
});
const runs = Number(args.runs);
const jobs = Number(args.jobs);
const pushJobs = Number(args['push-jobs']);
const concurrency = Number(args.concurrency);
const payload = Buffer.alloc(256, 'x');
const secret = 'bench-push-secret-0123456789';

/** A receiver that answers every push 200 at once, counting them. */
async function startReceiver(): Promise<{ url: string; received: () => number; close(): void }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/push`,
    received: () => count,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * `clients` callers, each awaiting one HTTP POST at a time over keep-alive connections:
 * one job per request to /v1/jobs, or `batch` jobs per request to /v1/jobs/batch.
 */
async function httpEnqueue(port: number, total: number, clients: number, batch = 1): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const job = { queue: 'http', type: 'noop', payloadBase64: payload.toString('base64') };
  const body = Buffer.from(
    JSON.stringify(batch === 1 ? job : { jobs: Array.from({ length: batch }, () => job) }),
  );
  const path = batch === 1 ? '/v1/jobs' : '/v1/jobs/batch';
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path,
          agent,
          headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  let claimed = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (claimed < total) {
        claimed += batch;
        await post();
      }
    }),
  );
  agent.destroy();
}

/** `callers` callers, each awaiting one unary Enqueue at a time, over one gRPC channel. */
async function unaryEnqueue(port: number, total: number, callers: number): Promise<void> {
  const client = new QueueServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
  // Every other field at its default (a field added to the proto needs no change here).
  const job = EnqueueJob.fromPartial({ queue: 'unary', type: 'noop', payload });
  let claimed = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (claimed < total) {
        claimed++;
        await new Promise<void>((resolve, reject) =>
          client.enqueue({ job }, new Metadata(), (error) => (error ? reject(error) : resolve())),
        );
      }
    }),
  );
  client.close();
}

type Path =
  | 'gRPC W1 (SDK)'
  | 'gRPC unary'
  | 'HTTP keep-alive'
  | 'HTTP batches of 50'
  | 'push (max_leased 50)';
const paths: readonly Path[] = [
  'gRPC W1 (SDK)',
  'gRPC unary',
  'HTTP keep-alive',
  'HTTP batches of 50',
  'push (max_leased 50)',
];

async function runOnce(
  path: Path,
  receiverUrl: string,
  receiver: { received: () => number },
): Promise<PhaseFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-http-bench-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    '[queues.push]\nmax_leased = 50\n' +
      `[queues.push.push]\nurl = "${receiverUrl}"\nsecret_env = "SEPP_BENCH_PUSH_SECRET"\nallow_private_targets = true\n`,
  );
  process.env.SEPP_BENCH_CONFIG = config;
  process.env.SEPP_BENCH_PUSH_SECRET = secret;
  const server = await BenchServer.start(join(dir, 'data'), 'full');
  delete process.env.SEPP_BENCH_CONFIG;
  const client = SeppClient.connect(`127.0.0.1:${server.port}`);
  try {
    await client.ready();
    switch (path) {
      case 'gRPC W1 (SDK)':
        return await measured(server, jobs, () => enqueueJobs(client, 'w1', jobs, concurrency));
      case 'gRPC unary':
        return await measured(server, jobs, () => unaryEnqueue(server.port, jobs, concurrency));
      case 'HTTP keep-alive':
        return await measured(server, jobs, () => httpEnqueue(server.httpPort ?? 0, jobs, concurrency));
      case 'HTTP batches of 50':
        return await measured(server, jobs, () => httpEnqueue(server.httpPort ?? 0, jobs, concurrency, 50));
      case 'push (max_leased 50)': {
        await client.pauseQueue('push');
        for (let i = 0; i < pushJobs; i += 1000) {
          const n = Math.min(1000, pushJobs - i);
          await client.enqueueBatch(
            Array.from({ length: n }, () => ({ queue: 'push', type: 'noop', payload })),
          );
        }
        const before = receiver.received();
        return await measured(server, pushJobs, async () => {
          await client.resumeQueue('push');
          for (;;) {
            const queue = (await client.listQueues()).find((q) => q.name === 'push');
            const left =
              (queue?.counts.ready ?? 1) + (queue?.counts.leased ?? 0) + (queue?.counts.scheduled ?? 0);
            if (left === 0 && receiver.received() - before >= pushJobs) return;
            await new Promise((r) => setTimeout(r, 20));
          }
        });
      }
    }
  } finally {
    await client.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const receiver = await startReceiver();
const samples = new Map<Path, PhaseFigures[]>(paths.map((p) => [p, []]));
const loads: number[] = [loadavg()[0] ?? 0];
try {
  for (let run = 1; run <= runs; run++) {
    // The order alternates from run to run: the first server of a run was measured to pay more.
    for (const path of run % 2 === 1 ? paths : [...paths].reverse()) {
      const figures = await runOnce(path, receiver.url, receiver);
      samples.get(path)?.push(figures);
      loads.push(loadavg()[0] ?? 0);
      console.error(
        `run ${run}/${runs} ${path}: ${Math.round(figures.perSecond)} jobs/s, server ${figures.serverCpuUs.toFixed(1)} µs/job; load ${loadavg()[0]?.toFixed(2)}`,
      );
    }
  }
} finally {
  receiver.close();
}

const med = (path: Path, pick: (f: PhaseFigures) => number) => median((samples.get(path) ?? []).map(pick));
const w1 = med('gRPC W1 (SDK)', (f) => f.perSecond);
const rows = paths.map((path) => [
  path,
  Math.round(med(path, (f) => f.perSecond)).toLocaleString('en'),
  med(path, (f) => f.serverCpuUs).toFixed(1),
  med(path, (f) => f.perCommit).toFixed(1),
  path === 'push (max_leased 50)' ? '–' : `${((med(path, (f) => f.perSecond) / w1) * 100).toFixed(0)} %`,
]);
console.log(
  `\nsepp HTTP API and push, medians of ${runs} runs (${jobs} enqueues per path, ${pushJobs} pushes), durability full, ` +
    `${concurrency} concurrent callers; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (1 min)\n`,
);
console.log(markdownTable(['path', 'jobs/s', 'server CPU µs/job', 'jobs/commit', 'of gRPC W1'], rows));
