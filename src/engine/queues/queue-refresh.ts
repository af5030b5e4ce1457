/**
 * What a server knows of its queues in memory — which exist, which are paused,
 * their run-time setting overrides, which have groups — read again from a store
 * other servers share (StoreSignals), so that what an operator changes through
 * one server reaches the others within the poll interval (a queue one of them just made is
 * found sooner, by the first call that names it: queue-lookup.ts). One read unit; its
 * answer is applied to every queue but those this server changed while it read
 * (their next refresh applies a fresher answer), so a refresh never undoes a
 * change of this server's, nor one a refresh that read later applied first.
 * Discarding the whole answer when anything changed here meanwhile would be as
 * safe, but on a busy server (a new queue made, a setting changed) the queue a
 * signal asked about would then wait for the next poll: a worker waiting on a
 * ready job for up to the poll interval (remote-wakeups.ts), and reading again
 * until nothing interleaves may never end while the server is busy.
 * A queue deleted through another server is not forgotten here: it leases
 * nothing, and its next job creates it again.
 */
import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import type { QueueSettingsFlat } from '../settings.ts';

interface Stored {
  queues: { name: string; paused: boolean }[];
  overrides: Map<string, Record<string, unknown>>;
}

export class QueueRefresh {
  constructor(
    private readonly ctx: Pick<EngineContext, 'queues' | 'read'>,
    /** Reads which queues have groups (flow control keeps that itself). */
    private readonly loadGroups: (view: StoreView) => Op<void>,
    /** A stored setting's key by its TOML name (unknown names are skipped). */
    private readonly keyOf: (name: string) => keyof QueueSettingsFlat | undefined,
  ) {}

  async refresh(): Promise<void> {
    const { queues } = this.ctx;
    const watch = queues.watchChanges();
    const stored = await this.read().finally(() => watch.stop());
    const { changed } = watch;
    for (const row of stored.queues) {
      if (changed.has(row.name)) continue;
      if (!queues.exists(row.name) || queues.isPaused(row.name) !== row.paused) {
        queues.markExisting(row.name, row.paused);
      }
    }
    const names = new Set([...stored.overrides.keys(), ...queues.allOverrides().keys()]);
    for (const queue of names) {
      if (changed.has(queue)) continue;
      const next = stored.overrides.get(queue) ?? {};
      if (canonical(next) !== canonical(queues.overridesOf(queue))) {
        queues.setOverrides(queue, next as Partial<QueueSettingsFlat>);
      }
    }
  }

  /** What the store holds of every queue (and, through `loadGroups`, which have groups). */
  private read(): Promise<Stored> {
    const { keyOf, loadGroups } = this;
    return this.ctx.read(function* (view): Op<Stored> {
      yield* loadGroups(view);
      const overrides = new Map<string, Record<string, unknown>>();
      for (const row of yield* view.settings.all()) {
        const key = keyOf(row.key);
        if (key === undefined) continue;
        const found = overrides.get(row.queue) ?? {};
        found[key] = JSON.parse(row.value_json);
        overrides.set(row.queue, found);
      }
      return { queues: yield* view.queues.all(), overrides };
    });
  }
}

/** The same overrides give the same text, whatever order their keys came in. */
function canonical(overrides: Readonly<Record<string, unknown>>): string {
  return JSON.stringify(Object.entries(overrides).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
