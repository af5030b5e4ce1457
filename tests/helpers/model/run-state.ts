/**
 * What a model-test run holds — the engine under test, the model, the dice
 * and the log — and the random requests and targets its steps draw.
 */
import assert from 'node:assert/strict';
import { FakeClock } from '../../../src/engine/clock.ts';
import { Engine } from '../../../src/engine/engine.ts';
import { SeppError } from '../../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../../src/engine/settings.ts';
import type { EnqueueRequest, LeasedJob } from '../../../src/engine/types.ts';
import type { StoreBackend } from '../../store/conformance/backend.ts';
import { bytes } from '../engine.ts';
import { mulberry32 } from '../prng.ts';
import { Dice, engineOptions, groupedQueueNames, queueNames, unknownId } from './config.ts';
import { saw } from './coverage.ts';
import { Model } from './model.ts';
import { fail, type ModelJob, type Outcome, ok } from './model-queues.ts';
import type { CheckedEngine } from './stored-jobs.ts';

/** The seed of the backoff jitter, the same sequence for the engine and the model. */
function jitterSeedOf(seed: number): number {
  return (seed ^ 0x9e3779b9) >>> 0;
}

/** The engine a run drives, on a store of the backend under test, and how to restart it. */
export interface RunEngine extends CheckedEngine {
  readonly clock: FakeClock;
  /** Closes the engine (and its store) and opens both again on the same data: a restart. */
  reopen(): Promise<RunEngine>;
  /** Closes the engine and removes the run's data. */
  dispose(): Promise<void>;
}

/**
 * Opens the engine of a run with `seed` on a fresh store of `backend` (the engine's jitter
 * follows the seed, as the model's does, and goes on across restarts).
 */
export function openRunEngine(seed: number, backend: StoreBackend): Promise<RunEngine> {
  const data = backend.create();
  const clock = new FakeClock();
  const random = mulberry32(jitterSeedOf(seed));
  const open = async (): Promise<RunEngine> => {
    const store = data.open();
    const engine = await Engine.open(
      store,
      { ...defaultEngineOptions(), ...engineOptions },
      { clock, random },
    );
    const close = () => engine.close();
    return {
      engine,
      store,
      clock,
      reopen: async () => {
        await close();
        return open();
      },
      dispose: async () => {
        await close();
        await data.dispose();
      },
    };
  };
  return open();
}

export async function outcomeOf<T>(call: Promise<T>): Promise<Outcome<T>> {
  try {
    return ok(await call);
  } catch (error) {
    if (error instanceof SeppError) return fail(error.code);
    throw error;
  }
}

export class RunState {
  t: RunEngine;
  readonly model: Model;
  readonly dice: Dice;
  readonly log: string[] = [];

  /** `t` is the run's engine, opened by openRunEngine(seed). */
  constructor(
    readonly seed: number,
    t: RunEngine,
  ) {
    this.dice = new Dice(mulberry32(seed));
    this.t = t;
    const clock = this.t.clock;
    this.model = new Model(() => clock.nowMs(), mulberry32(jitterSeedOf(seed)));
  }

  get engine() {
    return this.t.engine;
  }

  protected request(): EnqueueRequest {
    const d = this.dice;
    const now = this.t.clock.nowMs();
    const request: EnqueueRequest = {
      queue: d.weighted([
        [3, 'q0'],
        [3, 'q1'],
        [2, 'q2'],
        [2, 'q3'],
        [1, 'q4'],
      ]),
      type: 'job',
      payload: bytes(`p${d.int(0, 999)}`),
      priority: d.chance(0.04) ? 10 : d.pick([0, 0, 0, 1, 5, 9]),
    };
    const when = d.weighted([
      [6, 'now'],
      [1, 'delay0'],
      [2, 'delay'],
      [1, 'past'],
      [1, 'future'],
    ]);
    if (when === 'delay0') request.delayMs = 0;
    if (when === 'delay') request.delayMs = d.int(1, 20_000);
    if (when === 'past') request.runAtMs = now - d.int(1, 100_000);
    if (when === 'future') request.runAtMs = now + d.int(1, 20_000);
    if (d.chance(0.3)) request.idempotencyKey = d.pick(['a', 'b', 'c']);
    if (d.chance(request.idempotencyKey === undefined ? 0.01 : 0.3)) request.uniqueWhileActive = true;
    if (d.chance(0.25)) request.maxAttempts = d.chance(0.1) ? 0 : d.int(1, 3);
    const expiry = d.weighted([
      [8, 'none'],
      [2, 'ttl'],
      [1, 'at'],
    ]);
    // Sometimes before the job is due: refused.
    if (expiry === 'ttl') request.ttlMs = d.int(1, 30_000);
    if (expiry === 'at') request.expiresAtMs = now + d.int(-1000, 30_000);
    if (groupedQueueNames.has(request.queue) && d.chance(0.6)) request.group = d.pick(['g1', 'g2', 'g3']);
    return request;
  }

  protected describeRequests(requests: readonly EnqueueRequest[]): string {
    return requests
      .map((r) => {
        const { payload: _, type: __, ...rest } = r;
        return JSON.stringify(rest);
      })
      .join(' ');
  }

  protected reserveRequest() {
    const d = this.dice;
    const queues = Array.from({ length: d.int(1, 3) }, () => d.pick(queueNames));
    const maxJobs = d.int(1, 4);
    const leaseMs = d.chance(0.4) ? undefined : d.int(500, 30_000);
    return { queues, maxJobs, leaseMs };
  }

  protected checkLeased(got: LeasedJob[], expected: ModelJob[]): void {
    assert.deepEqual(
      got.map((j) => `${j.id}#${j.attempt}@${j.leaseDeadlineMs}/${j.maxAttempts}`),
      expected.map((j) => `${j.id}#${j.attempt}@${j.leaseDeadlineMs}/${j.base + j.maxAttempts}`),
    );
  }

  /** A settlement target: mostly a live lease, sometimes a stale one or an unknown job. */
  protected handle(): { jobId: string; attempt: number } {
    const d = this.dice;
    const live = [...this.model.jobs.values()].filter((j) => j.state === 'leased');
    // Stale: an earlier lease of a job that still exists (lease_lost when it is leased again).
    const stale = this.model.handles.filter((h) => {
      const j = this.model.jobs.get(h.jobId);
      return j !== undefined && j.attempt !== h.attempt;
    });
    const kind = d.weighted([
      [live.length > 0 ? 12 : 0, 'live'],
      [stale.length > 0 ? 2 : 0, 'stale'],
      [this.model.handles.length > 0 ? 1 : 0, 'any'],
      [0.5, 'unknown'],
    ]);
    if (kind === 'live') {
      const j = d.pick(live);
      return { jobId: j.id, attempt: j.attempt };
    }
    if (kind === 'stale') return d.pick(stale);
    if (kind === 'any') return d.pick(this.model.handles);
    return { jobId: unknownId, attempt: 1 };
  }

  protected async maintain(): Promise<void> {
    await this.engine.runMaintenance();
    const before = new Map([...this.model.jobs.values()].map((j) => [j.id, j.state]));
    this.model.maintain();
    for (const [id, state] of before) {
      const now = this.model.jobs.get(id)?.state ?? 'swept';
      const reason = this.model.jobs.get(id)?.deadReason;
      if (now !== state) saw(`maintenance ${state} → ${now}${now === 'dead' ? ` (${reason})` : ''}`);
    }
  }

  protected async advance(): Promise<void> {
    const now = this.t.clock.nowMs();
    // The next due time (run-at, lease deadline, end of a dedup window), to land on it or one millisecond before.
    const due = [...this.model.jobs.values()]
      .flatMap((j) => [
        j.state === 'scheduled' ? j.runAtMs : j.state === 'leased' ? (j.leaseDeadlineMs ?? 0) : 0,
        j.state === 'scheduled' || j.state === 'ready' ? (j.expiresAtMs ?? 0) : 0,
      ])
      .concat([...this.model.keys.values()].map((k) => k.expiresAtMs))
      .filter((at) => at > now);
    const nextDueMs = due.length > 0 ? Math.min(...due) - now : 0;
    const ms = this.dice.weighted<number>([
      [2, 0],
      [4, this.dice.int(1, 2000)],
      [4, this.dice.int(2000, 15_000)],
      [1, this.dice.int(15_000, 70_000)],
      [nextDueMs > 0 ? 3 : 0, nextDueMs],
      [nextDueMs > 0 ? 2 : 0, nextDueMs - 1],
    ]);
    this.log.push(`advance ${ms}`);
    this.t.clock.advance(ms);
    await this.maintain();
  }
}
