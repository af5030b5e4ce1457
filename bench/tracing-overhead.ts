/**
 * What telemetry costs on the request path.
 *
 * Macro: N jobs go enqueue → reserve → ack as unary gRPC calls over a real
 * socket, through the engine and the rpc server, in three set-ups:
 *   bare — the rpc server with no observer (no telemetry at all)
 *   off  — telemetry as `sepp serve` builds it without an OTLP endpoint:
 *          metrics and the observer, no spans (the default)
 *   on   — the same with tracing on: sampling 1.0, every span exported by
 *          the OTLP/HTTP exporter to a local sink that discards it
 * The server runs in this process; the clients and the sink run in a child
 * process, so the server's CPU time per job (process.cpuUsage, from the
 * timed start until telemetry has flushed) is measured apart from theirs.
 * CPU per job is the figure to read: wall-clock jobs/s moves with whatever
 * else the machine is doing. Rounds alternate the set-ups and medians are
 * reported. Durability is `relaxed`: an fsync per commit would hide CPU
 * costs behind the disk, and this measures CPU costs.
 *
 * Micro: the observer alone — callStarted → 2 annotations → end — per call,
 * with tracing off and on.
 *
 *   npx tsx bench/tracing-overhead.ts [--jobs 3000] [--rounds 5] [--concurrency 8]
 *   (--rounds 0 runs the micro-benchmark alone)
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { EnqueueJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { loadConfig, type TelemetryConfig } from '../src/config/index.ts';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { createRpcServer } from '../src/rpc/index.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { silentLogger, Telemetry } from '../src/telemetry/index.ts';

type Mode = 'bare' | 'off' | 'sampled' | 'on';
const modes: readonly Mode[] = ['bare', 'off', 'sampled', 'on'];
/** Trace sampling ratio of the modes that trace. */
const sampleRatio: Partial<Record<Mode, number>> = { sampled: 0.1, on: 1 };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const jobs = arg('jobs', 3000);
const rounds = arg('rounds', 5);
const concurrency = arg('concurrency', 8);

/** Parent → child: run one timed round against this port. Child → parent: progress. */
type ToChild = { kind: 'run'; port: number } | { kind: 'go' } | { kind: 'exit' };
type ToParent =
  | { kind: 'sink'; url: string; requests: number }
  | { kind: 'warm' }
  | { kind: 'done'; seconds: number };

// ---------------------------------------------------------------- the child: clients and the OTLP sink

/** Set while a round waits for the parent's go after its warm-up. */
let go: (() => void) | undefined;

async function child(): Promise<void> {
  let requests = 0;
  const sink = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      requests++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const send = (m: ToParent) => process.send?.(m);
  send({ kind: 'sink', url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`, requests });
  process.on('message', (m: ToChild) => {
    if (m.kind === 'exit') {
      send({ kind: 'sink', url: '', requests });
      sink.close();
      sink.closeAllConnections();
      process.disconnect();
      return;
    }
    if (m.kind === 'go') go?.();
    else void clientRound(m.port, send);
  });
}

function unary<Req, Res>(
  client: QueueServiceClient,
  method: (r: Req, m: Metadata, o: object, cb: (e: ServiceError | null, res: Res) => void) => unknown,
  request: Req,
): Promise<Res> {
  return new Promise((resolve, reject) =>
    method.call(client, request, new Metadata(), {}, (e, res) => (e ? reject(e) : resolve(res))),
  );
}

async function clientRound(port: number, send: (m: ToParent) => void): Promise<void> {
  const client = new QueueServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
  // Every other field at its default (a field added to the proto needs no change here).
  const job = EnqueueJob.fromPartial({ queue: 'bench', type: 'work', payload: Buffer.alloc(256, 7) });
  const reserve = {
    queues: ['bench'],
    maxJobs: 1,
    leaseDurationMs: 60_000,
    waitTimeoutMs: 0,
    workerId: '',
    maxResponseBytes: 0,
  };
  const loop = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          next++;
          await unary(client, client.enqueue, { job });
          const { jobs: leased } = await unary(client, client.reserve, reserve);
          for (const j of leased) await unary(client, client.ack, { jobId: j.jobId, attempt: j.attempt });
        }
      }),
    );
  };
  await loop(300); // connections and JIT, outside the timed part
  const ready = new Promise<void>((resolve) => {
    go = resolve;
  });
  send({ kind: 'warm' });
  await ready;
  const started = performance.now();
  await loop(jobs);
  const seconds = (performance.now() - started) / 1000;
  client.close();
  send({ kind: 'done', seconds });
}

// ---------------------------------------------------------------- the parent: the server under test

interface RoundResult {
  jobsPerSecond: number;
  cpuUsPerJob: number;
}

function nextMessage(worker: ReturnType<typeof fork>, kind: ToParent['kind']): Promise<ToParent> {
  return new Promise((resolve) => {
    const on = (m: ToParent) => {
      if (m.kind !== kind) return;
      worker.off('message', on);
      resolve(m);
    };
    worker.on('message', on);
  });
}

async function serverRound(
  mode: Mode,
  sinkUrl: string,
  worker: ReturnType<typeof fork>,
): Promise<RoundResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-bench-trace-'));
  const config = loadConfig({ flags: { dataDir, durability: 'relaxed' }, env: {}, cwd: dataDir });
  const ratio = sampleRatio[mode];
  const telemetryConfig: TelemetryConfig =
    ratio === undefined
      ? config.telemetry
      : { ...config.telemetry, otlpEndpoint: sinkUrl, tracesSampleRatio: ratio };
  const store = openSqliteStore(dataDir, { durability: 'relaxed' });
  const telemetry =
    mode === 'bare'
      ? undefined
      : await Telemetry.open(telemetryConfig, {
          logger: silentLogger,
          storeFiles: store.files,
          version: 'bench',
        });
  const engine = await Engine.open(store, config.engine, { clock: systemClock, ...telemetry?.engineHooks });
  telemetry?.observe(engine);
  const rpc = createRpcServer({
    engine,
    dataDir,
    apiKeys: [],
    facts: {
      version: 'bench',
      gitCommit: 'bench',
      durability: 'relaxed',
      startedAtMs: Date.now(),
      maxMessageBytes: config.grpc.maxMessageBytes,
      identity: () => ({
        hostName: 'bench',
        instanceId: 'bench',
        pid: process.pid,
        grpcAddress: '',
        adminAddress: '',
        httpAddress: null,
      }),
      grpcLimits: config.grpc,
      nowMs: () => Date.now(),
    },
    ...(telemetry === undefined ? {} : { observer: telemetry.rpcObserver }),
  });
  const port = await rpc.listen('127.0.0.1', 0);
  const warm = nextMessage(worker, 'warm');
  const done = nextMessage(worker, 'done');
  worker.send({ kind: 'run', port } satisfies ToChild);
  await warm;
  // The warm-up's spans are exported before the measurement starts, not inside it.
  await telemetry?.flush();
  const cpuStart = process.cpuUsage();
  worker.send({ kind: 'go' } satisfies ToChild);
  const { seconds } = (await done) as { seconds: number };
  // Spans still buffered are part of the cost: flush them inside the measurement.
  await telemetry?.shutdown(10_000);
  const cpu = process.cpuUsage(cpuStart);
  await rpc.shutdown(1000);
  engine.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { jobsPerSecond: jobs / seconds, cpuUsPerJob: (cpu.user + cpu.system) / jobs };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Server CPU per observed call — callStarted → annotate twice → end, as the
 * Enqueue handler does it — including exporting the spans (flushed to the
 * sink inside the measurement). Pure CPU with no I/O wait, so it moves far
 * less with the machine's load than the macro figures.
 */
async function micro(telemetry: Telemetry, calls: number): Promise<number> {
  const observer = telemetry.rpcObserver;
  // No caller context, as from the macro's clients: the root sampler decides, at its ratio.
  const parent = undefined;
  const run = (n: number) => {
    for (let i = 0; i < n; i++) {
      const o = observer.callStarted({ method: 'Enqueue', parent });
      o.annotate({ queue: 'bench', type: 'work' });
      o.annotate({ jobId: '0190d1a2-0000-7000-8000-000000000000' });
      o.end(0, 'anonymous');
    }
  };
  run(10_000);
  await telemetry.flush();
  const cpuStart = process.cpuUsage();
  // In slices, so the batch span processor's timer gets to export as it would in a server.
  for (let done = 0; done < calls; done += 1000) {
    run(1000);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await telemetry.flush();
  const cpu = process.cpuUsage(cpuStart);
  return ((cpu.user + cpu.system) * 1000) / calls;
}

async function parent(): Promise<void> {
  const worker = fork(process.argv[1]!, ['--child', ...process.argv.slice(2)], {
    execArgv: ['--import', 'tsx'],
  });
  const { url: sinkUrl } = (await nextMessage(worker, 'sink')) as { url: string };
  const results: Record<Mode, RoundResult[]> = { bare: [], off: [], sampled: [], on: [] };
  for (let r = 0; r < rounds; r++) {
    for (const mode of modes) {
      const result = await serverRound(mode, sinkUrl, worker);
      results[mode].push(result);
      console.log(
        `round ${r + 1} ${mode.padEnd(4)} ${result.jobsPerSecond.toFixed(0).padStart(5)} jobs/s  ${result.cpuUsPerJob.toFixed(0)} µs server CPU/job`,
      );
    }
  }
  const microCalls = 100_000;
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-micro-'));
  const config = loadConfig({ flags: { dataDir: dir }, env: {}, cwd: dir }).telemetry;
  const deps = { logger: silentLogger, storeFiles: undefined, version: 'bench' };
  const offT = await Telemetry.open(config, deps);
  const sampledT = await Telemetry.open({ ...config, otlpEndpoint: sinkUrl, tracesSampleRatio: 0.1 }, deps);
  const onT = await Telemetry.open({ ...config, otlpEndpoint: sinkUrl, tracesSampleRatio: 1 }, deps);
  const microOff = await micro(offT, microCalls);
  const microSampled = await micro(sampledT, microCalls);
  const microOn = await micro(onT, microCalls);
  await Promise.all([offT.shutdown(1000), sampledT.shutdown(1000), onT.shutdown(1000)]);
  const sinkDone = nextMessage(worker, 'sink');
  worker.send({ kind: 'exit' } satisfies ToChild);
  const { requests } = (await sinkDone) as { requests: number };
  rmSync(dir, { recursive: true, force: true });

  console.log('');
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}`);
  const m = (mode: Mode, pick: (r: RoundResult) => number) => median(results[mode].map(pick));
  const cpu = (mode: Mode) => m(mode, (r) => r.cpuUsPerJob);
  if (rounds > 0) {
    const rate = (mode: Mode) => m(mode, (r) => r.jobsPerSecond);
    const pct = (a: number, b: number) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)} %`;
    const row = (label: string, mode: Mode, versus?: Mode) =>
      console.log(
        `  ${label.padEnd(28)}${cpu(mode).toFixed(0).padStart(6)} µs ${versus === undefined ? ''.padStart(9) : pct(cpu(mode), cpu(versus)).padStart(9)}  ${rate(mode).toFixed(0).padStart(6)}${versus === undefined ? '' : `  (vs ${versus})`}`,
      );
    console.log(
      `macro: enqueue → reserve → ack as unary calls, ${jobs} jobs × ${rounds} rounds, concurrency ${concurrency}, durability relaxed; medians`,
    );
    console.log(`  ${''.padEnd(28)}server CPU/job        jobs/s`);
    row('bare (no telemetry)', 'bare');
    row('tracing off (metrics only)', 'off', 'bare');
    row('tracing on, sampling 0.1', 'sampled', 'off');
    row('tracing on, sampling 1.0', 'on', 'off');
    // Rounds run back to back, so a ratio within one round cancels most of the machine's drift.
    const paired = (a: Mode, b: Mode) =>
      median(results[a].map((r, i) => r.cpuUsPerJob / results[b][i]!.cpuUsPerJob)).toFixed(3);
    console.log(
      `  median of per-round CPU ratios: off/bare ${paired('off', 'bare')}, sampled/off ${paired('sampled', 'off')}, on/off ${paired('on', 'off')}`,
    );
    console.log(`  OTLP requests the sink received: ${requests}`);
  }
  console.log(`micro: CPU per observed call (start, 2 annotations, end), ${microCalls} calls`);
  console.log(`  tracing off ${microOff.toFixed(0).padStart(6)} ns/call (rpc.server.duration only)`);
  console.log(`  sampled 0.1 ${microSampled.toFixed(0).padStart(6)} ns/call`);
  console.log(
    `  tracing on  ${microOn.toFixed(0).padStart(6)} ns/call (plus a span created, attributed, ended and exported as OTLP JSON)`,
  );
  if (rounds > 0) {
    const perCallNs = (cpu('bare') / 3) * 1000;
    const share = (ns: number) => `${((ns / perCallNs) * 100).toFixed(1)} %`;
    console.log(
      `  against ${perCallNs.toFixed(0)} ns of server CPU per bare unary call: off +${share(microOff)}, sampled 0.1 +${share(microSampled)}, on +${share(microOn)}`,
    );
  }
}

if (process.argv.includes('--child')) void child();
else void parent();
