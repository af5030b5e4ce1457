/**
 * The workloads of bench/writer-thread.ts, run in one child process per (mode, run):
 * W1 enqueue, then W1 drain of those jobs, then W2 rounds, against one writer.
 *
 * The main thread plays the server's part around the SQL: per message it decodes the
 * request and encodes the answer with the protocol's generated code (ts-proto, as the
 * server does), plus `workUs` of busy work per message standing in for what this
 * benchmark leaves out (gRPC, HTTP/2, the engine's JavaScript). The clients are
 * closed loops in the same thread that cost nothing else: no network, no think time.
 */
import { performance } from 'node:perf_hooks';
import { EnqueueJob, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { EnqueueRequest, EnqueueResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { AckRequest, AckResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { JobIdGenerator } from '../../src/engine/jobs/job-id.ts';
import type { LeasedRow, NewJobRow } from '../../src/store/rows.ts';
import { benchQueue, type Op, type OpResult, threadCpuUs } from './writer-ops.ts';
import type { Writer } from './writers.ts';

export interface WorkloadOptions {
  jobs: number;
  producers: number;
  rounds: number;
  payloadBytes: number;
  workUs: number;
}

/** One phase's figures, per unit (a job, or a W2 round). */
export interface PhaseResult {
  units: number;
  elapsedMs: number;
  userUs: number;
  systemUs: number;
  mainThreadUs: number;
  writerThreadUs: number;
  /** Share of the phase the main thread's event loop was busy (perf_hooks eventLoopUtilization). */
  mainBusy: number;
  /** W2: the median time of one round (less moved by other load than the rate); W1: absent. */
  roundP50Ms?: number;
  commits: number;
  operations: number;
  batchMs: number;
}

export type Phase = 'w1-enqueue' | 'w1-drain' | 'w2-round';

const leaseMs = 60_000;
const ids = new JobIdGenerator();

/** Busy work standing in for the server's per-message cost outside this benchmark. */
function spin(us: number): void {
  if (us <= 0) return;
  const endMs = performance.now() + us / 1000;
  let turns = 0;
  while (performance.now() < endMs) turns++;
  if (turns < 0) throw new Error('unreachable');
}

export async function runWorkloads(
  writer: Writer,
  options: WorkloadOptions,
): Promise<Record<Phase, PhaseResult>> {
  // What a client sends for each enqueue: encoded once, decoded by the "server" every time.
  const request = EnqueueRequest.encode({
    job: EnqueueJob.fromPartial({
      queue: benchQueue,
      type: 'bench',
      payload: Buffer.alloc(options.payloadBytes, 7),
      contentType: 'application/octet-stream',
      maxAttempts: 3,
    }),
  }).finish();

  /** Server side of one enqueue: decode, build the insert, submit; after the commit, encode the answer. */
  const enqueueOp = (): { op: Op; jobId: string } => {
    const job = EnqueueRequest.decode(request).job!;
    spin(options.workUs);
    const nowMs = Date.now();
    const jobId = ids.next(nowMs);
    const insert: NewJobRow = {
      id: jobId,
      queue: job.queue,
      type: job.type,
      state: 'ready',
      priority: job.priority,
      payload: job.payload,
      content_type: job.contentType,
      metadata_json: null,
      traceparent: null,
      tracestate: null,
      idempotency_key: null,
      max_attempts: job.maxAttempts,
      lease_ms: null,
      enqueued_at_ms: nowMs,
      run_at_ms: nowMs,
      group_key: null,
      expires_at_ms: null,
      timeout_ms: null,
    };
    return { op: { kind: 'enqueue', job: insert }, jobId };
  };
  const answerEnqueue = (jobId: string) => EnqueueResponse.encode({ jobId, deduplicated: false }).finish();
  const leaseOp = (): Op => {
    const nowMs = Date.now();
    return {
      kind: 'lease',
      queue: benchQueue,
      limit: 1,
      nowMs,
      leaseDeadlineMs: nowMs + leaseMs,
      timeoutMs: null,
      maxLeaseDeadlineMs: nowMs + leaseMs,
      workerId: null,
    };
  };
  /** Server side of a leased job: the row to the protocol's LeasedJob, encoded. */
  const deliver = (row: LeasedRow) => {
    spin(options.workUs);
    return LeasedJob.encode(
      LeasedJob.fromPartial({
        jobId: row.id,
        queue: row.queue,
        type: row.type,
        payload: Buffer.from(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength),
        contentType: row.content_type,
        priority: row.priority,
        attempt: row.attempt,
        maxAttempts: row.max_attempts,
        leaseDeadlineMs: row.lease_deadline_ms ?? 0,
        enqueuedAtMs: row.enqueued_at_ms,
        runAtMs: row.run_at_ms,
      }),
    ).finish();
  };
  /** The client encodes the ack; the server decodes it and submits it. */
  const ackOp = (row: LeasedRow): Op => {
    const decoded = AckRequest.decode(AckRequest.encode({ jobId: row.id, attempt: row.attempt }).finish());
    spin(options.workUs);
    return { kind: 'ack', id: decoded.jobId, attempt: decoded.attempt };
  };
  const leased = (result: OpResult): LeasedRow | undefined =>
    result.kind === 'leased' ? result.rows[0] : undefined;

  const phases = {} as Record<Phase, PhaseResult>;

  phases['w1-enqueue'] = await measure(writer, options.jobs, async () => {
    let issued = 0;
    const producer = async () => {
      while (issued < options.jobs) {
        issued++;
        const { op, jobId } = enqueueOp();
        await writer.submit(op);
        answerEnqueue(jobId);
      }
    };
    await Promise.all(Array.from({ length: options.producers }, producer));
  });

  let drained = 0;
  phases['w1-drain'] = await measure(writer, options.jobs, async () => {
    // Each consumer sends its ack with its next request for a job (as a Work stream's
    // settlement + credit): both are operations of the same batch.
    const consumer = async () => {
      let previous: LeasedRow | undefined;
      for (;;) {
        const ops = previous === undefined ? [leaseOp()] : [ackOp(previous), leaseOp()];
        const results = await Promise.all(ops.map((op) => writer.submit(op)));
        if (previous !== undefined) {
          AckResponse.encode({}).finish();
          drained++;
        }
        previous = leased(results.at(-1)!);
        if (previous === undefined) return;
        deliver(previous);
      }
    };
    await Promise.all(Array.from({ length: options.producers }, consumer));
  });
  if (drained !== options.jobs) throw new Error(`drained ${drained} jobs of ${options.jobs}`);

  const roundMs: number[] = [];
  phases['w2-round'] = await measure(writer, options.rounds, async () => {
    // One client: enqueue, then a waiting worker takes the job in the same commit (the
    // server's hand-off), then the ack in a commit of its own: two commits per round.
    for (let round = 0; round < options.rounds; round++) {
      const startMs = performance.now();
      const { op, jobId } = enqueueOp();
      const [, lease] = await Promise.all([writer.submit(op), writer.submit(leaseOp())]);
      answerEnqueue(jobId);
      const row = leased(lease!);
      if (row === undefined) throw new Error('W2: the lease found no job');
      deliver(row);
      const ack = await writer.submit(ackOp(row));
      if (ack.kind !== 'acked' || !ack.ok) throw new Error('W2: the ack was refused');
      AckResponse.encode({}).finish();
      roundMs.push(performance.now() - startMs);
    }
  });
  roundMs.sort((a, b) => a - b);
  phases['w2-round'].roundP50Ms = roundMs[Math.floor(roundMs.length / 2)];
  return phases;
}

async function measure(writer: Writer, units: number, run: () => Promise<void>): Promise<PhaseResult> {
  const writerBefore = await writer.stats();
  const mainBefore = threadCpuUs();
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const startMs = performance.now();
  await run();
  const elapsedMs = performance.now() - startMs;
  const elu = performance.eventLoopUtilization(eluBefore);
  const cpu = process.cpuUsage(cpuBefore);
  const mainAfter = threadCpuUs();
  const writerAfter = await writer.stats();
  return {
    units,
    elapsedMs,
    userUs: cpu.user,
    systemUs: cpu.system,
    mainThreadUs: mainAfter.userUs + mainAfter.systemUs - mainBefore.userUs - mainBefore.systemUs,
    writerThreadUs:
      writerAfter.writerUserUs +
      writerAfter.writerSystemUs -
      writerBefore.writerUserUs -
      writerBefore.writerSystemUs,
    mainBusy: elu.utilization,
    commits: writerAfter.commits - writerBefore.commits,
    operations: writerAfter.operations - writerBefore.operations,
    batchMs: writerAfter.batchMs - writerBefore.batchMs,
  };
}
