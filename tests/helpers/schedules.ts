/** Schedule tests' helpers: a spec, stepping the fake clock tick by tick, and the ticks' jobs. */
import type { FakeClock } from '../../src/engine/clock.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { ScheduleSpec } from '../../src/engine/schedules/types.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { barrier, bytes } from './engine.ts';

/** A schedule named `name` on queue `q` (type `tick`), with `extra` on top. */
export function spec(name: string, extra: Partial<ScheduleSpec> = {}): ScheduleSpec {
  return {
    name,
    cron: extra.intervalMs === undefined ? '* * * * *' : undefined,
    template: { queue: 'q', type: 'tick', payload: bytes('{}'), contentType: 'application/json' },
    ...extra,
  } as ScheduleSpec;
}

/**
 * Moves the clock on by `totalMs` in steps of `stepMs`, letting the maintenance
 * pass each step's timer started commit before the next step: the server on
 * time, as opposed to one jump, which is the server waking late.
 */
export async function runFor(
  engine: Engine,
  clock: FakeClock,
  totalMs: number,
  stepMs = 1000,
): Promise<void> {
  for (let doneMs = 0; doneMs < totalMs; doneMs += stepMs) {
    clock.advance(Math.min(stepMs, totalMs - doneMs));
    await barrier(engine);
  }
}

/** Moves the clock by `ms` at once (the server asleep or down meanwhile), then lets the pass commit. */
export async function jump(engine: Engine, clock: FakeClock, ms: number): Promise<void> {
  clock.advance(ms);
  await barrier(engine);
}

export interface TickJob {
  id: string;
  key: string;
  /** The tick time the key names (ISO 8601, UTC), or `manual:…` for a trigger. */
  tick: string;
  state: string;
  runAtMs: number;
  enqueuedAtMs: number;
  leaseMs: number | null;
}

/** The jobs schedules enqueued, by tick, oldest first (read straight from the rows). */
export function tickJobs(db: Db, name?: string): TickJob[] {
  const rows = db
    .prepare<
      [],
      {
        id: string;
        idempotency_key: string;
        state: string;
        run_at_ms: number;
        enqueued_at_ms: number;
        lease_ms: number | null;
      }
    >(
      "SELECT id, idempotency_key, state, run_at_ms, enqueued_at_ms, lease_ms FROM jobs WHERE idempotency_key LIKE 'schedule:%' ORDER BY seq",
    )
    .all();
  return rows
    .map((r) => ({
      id: r.id,
      key: r.idempotency_key,
      tick: r.idempotency_key.split(':').slice(2).join(':'),
      state: r.state,
      runAtMs: r.run_at_ms,
      enqueuedAtMs: r.enqueued_at_ms,
      leaseMs: r.lease_ms,
    }))
    .filter((j) => name === undefined || j.key.startsWith(`schedule:${name}:`));
}

/** ISO 8601 of ms since the epoch, as the tick keys have it. */
export const iso = (ms: number): string => new Date(ms).toISOString();
