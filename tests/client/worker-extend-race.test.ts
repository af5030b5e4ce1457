/**
 * A lease call answered after the job's own settlement, through the real Worker
 * over gRPC, on both transports: the lease keeper's extend, and the handler's
 * progress report (the only lease calls a running job makes; its dependency
 * results come with the job). The lease keeper extends a job until it ends, and
 * a handler may return while a `job.progress()` it did not await is on its way;
 * when the ack (or nack) reaches the server first, that call's answer is
 * NOT_FOUND. The settlement's own answer says how the attempt ended: the late
 * answer must not report a lost lease (no `leaseLost` event, no warning, no
 * aborted signal, no `error` event, and the progress promise still resolves).
 * Here the call is held and answered between the settlement and the job's end,
 * where the race puts it; unary calls are not ordered, and a stream's call can
 * go out after the ack.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaseLostError } from '@sepp-queue/client';
import type { WorkTransport } from '../../clients/typescript/src/work-transport.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { type Deferred, deferred, nextEvents } from './helpers.ts';

const leaseMs = 30_000;

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker: a lease call answered after the settlement (${transport})`, () => {
    const clock = new FakeClock(Date.UTC(2026, 3, 1));
    const served = serverAndClient({ clock }, { transport });

    for (const call of ['extend', 'progress'] as const) {
      for (const outcome of ['ack', 'nack'] as const) {
        test(`after the ${outcome} a NOT_FOUND ${call} is no lost lease`, async () => {
          const queue = `${call}-race-${outcome}-${transport}`;
          const { client } = served;
          await client.enqueueJson(queue, 't', {}, { maxAttempts: 1 });
          const asked = deferred();
          let signal: AbortSignal | undefined;
          let reported: Promise<void> | undefined;
          const warnings: string[] = [];
          const worker = client.worker({
            clock,
            leaseMs,
            concurrency: 1,
            queues: [queue],
            logger: { info() {}, warn: (line) => void warnings.push(line), error() {} },
            handlers: {
              t: async (job, jobSignal) => {
                signal = jobSignal;
                // Not awaited: the handler returns with its report on the way.
                if (call === 'progress') reported = job.progress(50, { step: 'last' });
                await asked.promise;
                if (outcome === 'nack') throw new Error('boom');
              },
            },
          });
          // The worker's own transport, wrapped on this one object: the race needs the call's answer held.
          const lanes = (worker as unknown as { lanes: { transport: WorkTransport }[] }).lanes;
          assert.equal(lanes.length, 1);
          const via = (lanes[0] as { transport: WorkTransport }).transport as unknown as Record<
            string,
            (...args: unknown[]) => Promise<unknown>
          >;
          const realCall = (via[call] as (...args: unknown[]) => Promise<unknown>).bind(via);
          const realSettle = (via[outcome] as (...args: unknown[]) => Promise<unknown>).bind(via);
          let held: { args: unknown[]; answer: Deferred<unknown> } | undefined;
          let heldError: unknown;
          via[call] = (...args) => {
            if (held !== undefined) return realCall(...args);
            held = { args, answer: deferred<unknown>() };
            asked.resolve();
            return held.answer.promise;
          };
          via[outcome] = async (...args) => {
            const settled = await realSettle(...args);
            assert.ok(held !== undefined);
            try {
              held.answer.resolve(await realCall(...held.args));
            } catch (error) {
              heldError = error;
              held.answer.reject(error);
            }
            // The late answer is handled before the settlement's: the worker's reaction to it was
            // registered on that promise first, so it has run once this one has.
            await held.answer.promise.catch(() => undefined);
            return settled;
          };
          const errors: string[] = [];
          worker.on('error', (error) => void errors.push(error.message));
          const seen: string[] = [];
          worker.on('leaseLost', () => seen.push('leaseLost'));
          worker.on('cancelled', () => seen.push('cancelled'));
          const ended = nextEvents(worker, outcome === 'ack' ? 'completed' : 'failed');
          try {
            await nextEvents(worker, 'started');
            if (call === 'extend') clock.advance(leaseMs / 3);
            await ended;
            // A progress report's promise never rejects, even answered NOT_FOUND after the job ended.
            await reported;
          } finally {
            await worker.close({ timeoutMs: 0 });
          }
          assert.ok(
            heldError instanceof LeaseLostError,
            `the held ${call} was answered NOT_FOUND: ${String(heldError)}`,
          );
          assert.equal(heldError.code, 'not_found');
          assert.deepEqual(seen, [], 'no lost lease, no cancel');
          assert.deepEqual(errors, [], 'no error event');
          assert.equal(signal?.aborted, false, 'the signal of a settled job is not aborted');
          assert.deepEqual(
            warnings.filter((line) => line.includes('lost its lease')),
            [],
          );
        });
      }
    }
  });
}
