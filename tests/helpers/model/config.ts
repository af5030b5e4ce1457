/**
 * The model test's dice and configuration: the queues (declared with their
 * settings, and q4 created on first use), the engine's limits and where the
 * runs' databases live.
 */
import assert from 'node:assert/strict';
import {
  defaultEngineLimits,
  defaultQueueSettings,
  type EngineOptions,
  type QueueSettings,
} from '../../../src/engine/settings.ts';

export class Dice {
  constructor(readonly next: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    assert.ok(items.length > 0);
    return items[Math.floor(this.next() * items.length)]!;
  }
  weighted<T>(choices: readonly [number, T][]): T {
    const total = choices.reduce((n, [w]) => n + w, 0);
    let r = this.next() * total;
    for (const [w, value] of choices) {
      r -= w;
      if (r < 0) return value;
    }
    return choices.at(-1)![1];
  }
}

// ------------------------------------------------------------------ configuration

export const queueOverrides: Record<string, Partial<QueueSettings>> = {
  q0: {
    maxAttempts: 3,
    backoff: { baseMs: 1000, factor: 2, capMs: 8000, jitter: 0 },
    defaultLeaseMs: 5000,
    maxLeaseMs: 20_000,
    // Flow control (model-flow.ts): jobs of q0 and q4 may have groups.
    groupMaxLeased: 1,
  },
  q1: {
    maxAttempts: 2,
    backoff: { baseMs: 500, factor: 3, capMs: 10_000, jitter: 0.5 },
    completedRetentionMs: 15_000,
    dedupWindowMs: 20_000,
    expiredAction: 'delete',
  },
  q2: {
    maxAttempts: 1,
    deadRetentionMs: 25_000,
    maxLeaseMs: 8000,
    defaultLeaseMs: 3000,
    cancelledRetentionMs: 30_000,
  },
  q3: { maxDepth: 4, dedupWindowMs: 0, maxLeased: 2 },
};
/** Queues whose jobs the model gives a group now and then (q4 has no group limits: turns only). */
export const groupedQueueNames = new Set(['q0', 'q4']);
/** q4 is not declared: it is created on first use, with the defaults. */
export const queueNames = ['q0', 'q1', 'q2', 'q3', 'q4'] as const;
export const limits = { ...defaultEngineLimits, maxErrorHistory: 3, maxErrorBytes: 64 };
export const engineOptions: Partial<EngineOptions> = { queues: queueOverrides, limits };
export const sweepIntervalMs = 60_000;
export const unknownId = '01900000-0000-7000-8000-000000000000';

export function settingsOf(queue: string): QueueSettings {
  const override = queueOverrides[queue] ?? {};
  return {
    ...defaultQueueSettings,
    ...override,
    backoff: { ...defaultQueueSettings.backoff, ...override.backoff },
  };
}
