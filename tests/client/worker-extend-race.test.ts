/**
 * An extend answered after the job's own settlement, through the real Worker over
 * gRPC, on both transports. The lease keeper extends a job until it ends, so an
 * extend can be in flight while the handler returns; when the ack (or nack)
 * reaches the server first, the extend's answer is NOT_FOUND. The settlement's
 * own answer says how the attempt ended: the late extend must not report a lost
 * lease (no `leaseLost` event, no warning, no aborted signal). Here the extend is
 * held and answered between the settlement and the job's end, where the race puts
 * it; unary calls are not ordered, and a stream's extend can go out after the ack.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaseLostError } from '@sepp-queue/client';
import type { WorkTransport } from '../../clients/typescript/src/work-transport.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { type Deferred, deferred, nextEvents, settle } from './helpers.ts';

const leaseMs = 30_000;

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker: an extend answered after the settlement (${transport})`, () => {
    const clock = new FakeClock(Date.UTC(2026, 3, 1));
    const served = serverAndClient({ clock }, { transport });

    for (const outcome of ['ack', 'nack'] as const) {
      test(`after the ${outcome} a NOT_FOUND extend is no lost lease`, async () => {
        const queue = `extend-race-${outcome}-${transport}`;
        const { client } = served;
        await client.enqueueJson(queue, 't', {}, { maxAttempts: 1 });
        const extendAsked = deferred();
        let signal: AbortSignal | undefined;
        const warnings: string[] = [];
        const worker = client.worker({
          clock,
          leaseMs,
          concurrency: 1,
          queues: [queue],
          logger: { info() {}, warn: (line) => void warnings.push(line), error() {} },
          handlers: {
            t: async (_job, jobSignal) => {
              signal = jobSignal;
              await extendAsked.promise;
              if (outcome === 'nack') throw new Error('boom');
            },
          },
        });
        // The worker's own transport, wrapped on this one object: the race needs the extend's answer held.
        const lanes = (worker as unknown as { lanes: { transport: WorkTransport }[] }).lanes;
        assert.equal(lanes.length, 1);
        const via = (lanes[0] as { transport: WorkTransport }).transport;
        const realExtend = via.extend.bind(via);
        const realSettle = via[outcome].bind(via) as (...args: unknown[]) => Promise<unknown>;
        let held: { args: Parameters<WorkTransport['extend']>; answer: Deferred<Date> } | undefined;
        let heldError: unknown;
        via.extend = (...args) => {
          if (held !== undefined) return realExtend(...args);
          held = { args, answer: deferred<Date>() };
          extendAsked.resolve();
          return held.answer.promise;
        };
        (via as unknown as Record<string, unknown>)[outcome] = async (...args: unknown[]) => {
          const settled = await realSettle(...args);
          assert.ok(held !== undefined);
          try {
            held.answer.resolve(await realExtend(...held.args));
          } catch (error) {
            heldError = error;
            held.answer.reject(error);
          }
          await settle(5); // The extend's answer is handled before the settlement's.
          return settled;
        };
        worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
        const seen: string[] = [];
        worker.on('leaseLost', () => seen.push('leaseLost'));
        worker.on('cancelled', () => seen.push('cancelled'));
        const ended = nextEvents(worker, outcome === 'ack' ? 'completed' : 'failed');
        try {
          await nextEvents(worker, 'started');
          clock.advance(leaseMs / 3);
          await ended;
        } finally {
          await worker.close({ timeoutMs: 0 });
        }
        assert.ok(
          heldError instanceof LeaseLostError,
          `the held extend was answered NOT_FOUND: ${String(heldError)}`,
        );
        assert.equal(heldError.code, 'not_found');
        assert.deepEqual(seen, [], 'no lost lease, no cancel');
        assert.equal(signal?.aborted, false, 'the signal of a settled job is not aborted');
        assert.deepEqual(
          warnings.filter((line) => line.includes('lost its lease')),
          [],
        );
      });
    }
  });
}
