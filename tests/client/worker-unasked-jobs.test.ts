/**
 * A Worker against a stand-in server that sends more jobs than asked for: a Work stream that
 * pushes 200 jobs past a credit of 3, a Reserve that answers 200 jobs to max_jobs 3. Jobs past
 * the credit or max_jobs are given back unstarted at once (a nack with give_back), never held:
 * the worker holds at most its prefetch, so a server that ignores the credit cannot make it
 * hold, and keep extending, jobs without bound. An honest server's side: worker-prefetch tests.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GetServerInfoResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { JobState, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type {
  AckResponse,
  NackRequest,
  NackResponse,
  ReserveRequest,
  ReserveResponse,
  WorkRequest,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { listenOnLoopback, settledOk } from '../helpers/stand-in-server.ts';
import { deferred, until } from './helpers.ts';

const flood = 200;
const features = ['nack_give_back', 'work_stop_delivery'];

/** Leased job `i`, as the stand-in hands it out. */
const leased = (i: number) =>
  LeasedJob.fromPartial({
    jobId: `j${i}`,
    queue: 'q',
    type: 't',
    attempt: 1,
    maxAttempts: 5,
    leaseDeadlineMs: Date.now() + 60_000,
  });

/** A server that sends `flood` jobs at the first credit or Reserve, whatever was asked; counts give-backs. */
async function greedy() {
  const server = new grpc.Server();
  const state = { asked: 0, sent: 0, giveBacks: 0, otherNacks: 0 };
  const nacked = (request: NackRequest) => {
    if (request.directive?.$case === 'giveBack') state.giveBacks++;
    else state.otherNacks++;
  };
  server.addService(QueueServiceService, {
    getServerInfo: (_call: unknown, done: grpc.sendUnaryData<GetServerInfoResponse>) =>
      done(null, GetServerInfoResponse.fromPartial({ limits: { maxReserveJobs: 1000 }, features })),
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        const credit =
          kind?.$case === 'credit' ? kind.value.jobs : kind?.$case === 'batch' ? kind.value.credit : 0;
        if (credit > 0 && state.sent === 0) {
          state.asked += credit;
          for (; state.sent < flood; state.sent++)
            call.write({ kind: { $case: 'job', value: leased(state.sent) } });
        }
        if (kind?.$case !== 'batch') return;
        for (const settlement of kind.value.settlements) {
          if (settlement.kind?.$case === 'nack') nacked(settlement.kind.value);
          call.write(settledOk(settlement));
        }
      });
      call.on('end', () => call.end());
    },
    reserve: (
      call: grpc.ServerUnaryCall<ReserveRequest, ReserveResponse>,
      done: grpc.sendUnaryData<ReserveResponse>,
    ) => {
      if (state.sent > 0) return; // Every later long-poll waits (until the worker closes).
      state.asked += call.request.maxJobs;
      const jobs = [];
      for (; state.sent < flood; state.sent++) jobs.push(leased(state.sent));
      done(null, { jobs });
    },
    nack: (call: grpc.ServerUnaryCall<NackRequest, NackResponse>, done: grpc.sendUnaryData<NackResponse>) => {
      nacked(call.request);
      done(null, { state: JobState.READY, runAtMs: 0 });
    },
    ack: (_call: unknown, done: grpc.sendUnaryData<AckResponse>) => done(null, {}),
  });
  const address = await listenOnLoopback(server);
  return { address, state, close: () => server.forceShutdown() };
}

for (const transport of ['stream', 'unary'] as const) {
  test(`${transport}: jobs past the ones asked for are given back at once, never held`, async () => {
    const server = await greedy();
    const client = SeppClient.connect(server.address);
    const gate = deferred();
    const warnings: string[] = [];
    const worker = client.worker({
      queues: ['q'],
      transport,
      concurrency: 1,
      prefetch: 2,
      logger: { info() {}, warn: (message: string) => warnings.push(message), error() {} },
      fallback: () => gate.promise,
    });
    try {
      await until(
        () => server.state.giveBacks === flood - 3,
        'every job past the three asked for given back',
      );
      assert.equal(server.state.asked, 3, 'one slot and two to hold were asked for');
      assert.deepEqual([worker.running, worker.held], [1, 2], 'it holds its prefetch, no more');
      assert.equal(server.state.otherNacks, 0);
      assert.equal(warnings.length, 1, `told once: ${warnings.join('; ')}`);
      assert.match(warnings[0] ?? '', /past the jobs asked for/);
    } finally {
      gate.resolve();
      await worker.close({ timeoutMs: 0 });
      await client.close();
      server.close();
    }
  });
}
