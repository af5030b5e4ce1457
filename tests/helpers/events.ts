/** Collects the engine's lifecycle events through a real subscription, for engine tests. */
import type { Engine } from '../../src/engine/engine.ts';
import type { SeppError } from '../../src/engine/errors.ts';
import type { EventSubscription } from '../../src/engine/events/event-log.ts';
import type { EventFilter, EventStart, LifecycleEvent } from '../../src/engine/events/lifecycle-event.ts';

export interface Collector {
  readonly events: LifecycleEvent[];
  readonly subscription: EventSubscription;
  /** The sequence reported by caughtUp, once it was. */
  caughtUpAt(): number | undefined;
  /** Why the engine ended the subscription, if it did. */
  ended(): SeppError | undefined;
  /** Sends whose `written` is held back (with `hold: true`). */
  readonly held: (() => void)[];
  /** Lets every held send complete. */
  release(): void;
  /** `kind:jobId` of each event, for compact assertions. */
  summary(): string[];
}

/**
 * Subscribes with `filter` from `start`. With `hold`, sends are never
 * reported written until `release()`: a subscriber that reads nothing.
 */
export function collect(
  engine: Engine,
  filter: Partial<EventFilter> = {},
  start: EventStart = { kind: 'now' },
  options: { hold?: boolean } = {},
): Collector {
  const events: LifecycleEvent[] = [];
  const held: (() => void)[] = [];
  let caughtUpAt: number | undefined;
  let ended: SeppError | undefined;
  const collector: Collector = {
    events,
    held,
    caughtUpAt: () => caughtUpAt,
    ended: () => ended,
    subscription: undefined as unknown as EventSubscription,
    release() {
      for (const written of held.splice(0)) written();
    },
    summary: () => events.map((e) => `${e.kind}:${e.jobId}`),
  };
  const subscription = engine.subscribeEvents({ queues: [], jobIds: [], kinds: [], ...filter }, start, {
    send(batch, written) {
      events.push(...batch);
      if (options.hold) held.push(written);
      else written();
    },
    caughtUp(sequence) {
      caughtUpAt = sequence;
    },
    end(error) {
      ended = error;
    },
  });
  (collector as { subscription: EventSubscription }).subscription = subscription;
  return collector;
}
