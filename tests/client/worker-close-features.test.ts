/**
 * A closing Worker (stream transport) against a stand-in server that names its features in
 * GetServerInfo (admin.proto `features`), or names none as a server older than them does:
 * - with `nack_give_back` and `work_stop_delivery`: the first message after close says
 *   `stop_delivery` before its give-backs, every held job is given back (the last attempt
 *   too), and a job pushed after the stop (leased before it arrived) is given back as well;
 * - without: held jobs are nacked for a retry at once (an attempt counted, as before
 *   give-backs), and the one on its last attempt is kept and runs.
 * The stand-in pushes three jobs to a worker of one slot and two held, and a fourth in answer
 * to the stop. The real server's side is tests/rpc/stop-delivery.test.ts. Last, `prefetch:
 * 'auto'` leases ahead of its slots only against a server with give-backs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GetServerInfoResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type {
  WorkRequest,
  WorkRequest_Settlement,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { listenOnLoopback, settledOk } from '../helpers/stand-in-server.ts';
import { deferred, until } from './helpers.ts';

/** What the stand-in saw: each settlement as `kind job directive`, and where a stop came. */
async function standIn(features: string[]) {
  const server = new grpc.Server();
  const seen: string[] = [];
  const leased = (jobId: string, maxAttempts: number) =>
    LeasedJob.fromPartial({
      jobId,
      queue: 'q',
      type: 't',
      attempt: 1,
      maxAttempts,
      leaseDeadlineMs: Date.now() + 60_000,
    });
  server.addService(QueueServiceService, {
    getServerInfo: (_call: unknown, done: grpc.sendUnaryData<GetServerInfoResponse>) =>
      done(null, GetServerInfoResponse.fromPartial({ limits: { maxReserveJobs: 1000 }, features })),
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      let credit = 0;
      let pushed = false;
      const settle = (settlement: WorkRequest_Settlement) => {
        const { kind } = settlement;
        const directive = kind?.$case === 'nack' ? ` ${kind.value.directive?.$case}` : '';
        seen.push(`${kind?.$case} ${kind?.value.jobId}${directive}`);
        call.write(settledOk(settlement));
      };
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        if (kind?.$case === 'credit') credit += kind.value.jobs;
        if (kind?.$case !== 'batch') return;
        if (kind.value.stopDelivery) {
          seen.push('stop');
          // Leased before the stop arrived: it still comes.
          call.write({ kind: { $case: 'job', value: leased('d', 5) } });
        }
        for (const s of kind.value.settlements) settle(s);
        credit += kind.value.credit;
      });
      // One running, one held with attempts left, one held on its last attempt.
      const push = setInterval(() => {
        if (pushed || credit < 3) return;
        pushed = true;
        clearInterval(push);
        for (const job of [leased('a', 5), leased('b', 3), leased('c', 1)]) {
          call.write({ kind: { $case: 'job', value: job } });
        }
      }, 1);
      call.on('end', () => {
        clearInterval(push);
        call.end();
      });
      call.on('error', () => clearInterval(push));
    },
  });
  const address = await listenOnLoopback(server);
  return { address, seen, close: () => server.forceShutdown() };
}

for (const features of [['nack_give_back', 'work_stop_delivery'], []]) {
  const older = features.length === 0;
  test(`close against a server ${older ? 'without features: counted nacks, the last attempt runs' : 'with give-backs: a stop first, every held job given back'}`, async () => {
    const server = await standIn(features);
    const client = SeppClient.connect(server.address);
    assert.deepEqual((await client.getServerInfo()).features, features);
    const gate = deferred();
    const started: string[] = [];
    const worker = client.worker({
      queues: ['q'],
      concurrency: 1,
      prefetch: 2,
      logger: { info() {}, warn() {}, error() {} },
      fallback: async (job) => {
        started.push(job.id);
        if (job.id === 'a') await gate.promise;
      },
    });
    try {
      await until(() => worker.running === 1 && worker.held === 2, 'one running and two held');
      const closed = worker.close();
      await until(
        () => server.seen.includes(older ? 'nack d retryDelayMs' : 'nack d giveBack'),
        'the late job back',
      );
      gate.resolve();
      await closed;
      if (older) {
        assert.deepEqual(started, ['a', 'c'], 'the held job on its last attempt ran');
        assert.deepEqual(server.seen.filter((s) => s !== 'stop').sort(), [
          'ack a',
          'ack c',
          'nack b retryDelayMs',
          'nack d retryDelayMs',
        ]);
      } else {
        assert.deepEqual(started, ['a'], 'no held job ran');
        assert.equal(server.seen[0], 'stop', 'the stop comes before the give-backs');
        assert.deepEqual(server.seen.slice(1).sort(), [
          'ack a',
          'nack b giveBack',
          'nack c giveBack',
          'nack d giveBack',
        ]);
      }
    } finally {
      gate.resolve();
      await worker.close({ timeoutMs: 0 });
      await client.close();
      server.close();
    }
  });
}

/** A stand-in that pushes a job for every slot of credit, up to `total`; counts the most leased at once. */
async function flood(features: string[], total: number) {
  const server = new grpc.Server();
  const state = { pushed: 0, acked: 0, mostLeased: 0 };
  server.addService(QueueServiceService, {
    getServerInfo: (_call: unknown, done: grpc.sendUnaryData<GetServerInfoResponse>) =>
      done(null, GetServerInfoResponse.fromPartial({ limits: { maxReserveJobs: 1000 }, features })),
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      const grant = (jobs: number) => {
        for (let i = 0; i < jobs && state.pushed < total; i++) {
          const job = LeasedJob.fromPartial({
            jobId: `j${state.pushed++}`,
            queue: 'q',
            type: 't',
            attempt: 1,
            maxAttempts: 5,
            leaseDeadlineMs: Date.now() + 60_000,
          });
          call.write({ kind: { $case: 'job', value: job } });
        }
        state.mostLeased = Math.max(state.mostLeased, state.pushed - state.acked);
      };
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        if (kind?.$case === 'credit') grant(kind.value.jobs);
        if (kind?.$case !== 'batch') return;
        for (const settlement of kind.value.settlements) {
          if (settlement.kind?.$case === 'ack') state.acked++;
          call.write(settledOk(settlement));
        }
        grant(kind.value.credit);
      });
      call.on('end', () => call.end());
    },
  });
  const address = await listenOnLoopback(server);
  return { address, state, close: () => server.forceShutdown() };
}

for (const features of [['nack_give_back', 'work_stop_delivery'], []]) {
  test(`prefetch auto ${features.length === 0 ? 'holds nothing against an older server' : 'leases ahead against a server with give-backs'}`, async () => {
    const server = await flood(features, 200);
    const client = SeppClient.connect(server.address);
    const worker = client.worker({
      queues: ['q'],
      concurrency: 2,
      logger: { info() {}, warn() {}, error() {} },
      fallback: async () => {},
    });
    try {
      await until(() => server.state.acked >= 100, 'a hundred quick jobs run');
      if (features.length === 0) {
        assert.equal(server.state.mostLeased, 2, 'never more leased than its slots');
        // What it says it leases ahead is what it does: nothing.
        assert.equal(worker.prefetchLimit, 0);
      } else {
        assert.ok(server.state.mostLeased > 2, `leased ahead: ${server.state.mostLeased} at once`);
        assert.ok(worker.prefetchLimit > 0);
      }
    } finally {
      await worker.close({ timeoutMs: 0 });
      await client.close();
      server.close();
    }
  });
}
