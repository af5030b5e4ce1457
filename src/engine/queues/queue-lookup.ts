/**
 * A queue another server just made, found when the registry misses it. On a store several
 * servers share, this server learns of a queue another one created at its next refresh
 * (queue-refresh.ts, within the poll interval); until then a call naming the queue would
 * answer NOT_FOUND for a queue that exists (a client behind a load balancer enqueues through
 * one server and asks another). So a miss asks the store: one read of the queue's row by its
 * primary key — and only when there is one, of its run-time overrides — in the call's
 * transaction where it has one. A queue found is added to the registry as a refresh adds it
 * (paused flag, overrides, groups), unless this server changed it while it read (the change
 * is fresher). A name that exists nowhere costs that one read on every call (a batch or a
 * flow reads each of its names once: EnqueueSteps.lookUpQueue): nothing remembers it beyond
 * the call, since a remembered absence would answer NOT_FOUND for a queue created since.
 * A listing (ListQueues, the admin API's queue list) finds them the same way (`findAll`):
 * one read of the stored queue names, and a lookup of each the registry misses.
 * On a store no other server shares (SQLite) the registry is the whole truth: a miss reads
 * nothing, and neither does a listing.
 */
import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import type { QueueSettingsFlat } from '../settings.ts';

export class QueueLookup {
  constructor(
    private readonly ctx: Pick<EngineContext, 'queues' | 'read' | 'limits'>,
    /** Whether other servers share the store (it has signals): only then can the registry miss a queue. */
    private readonly shared: boolean,
    /** Tells flow control the queue has had a job with a group (its leases take turns). */
    private readonly groupsFound: (queue: string) => void,
    /** A stored setting's key by its TOML name (unknown names are skipped). */
    private readonly keyOf: (name: string) => keyof QueueSettingsFlat | undefined,
  ) {}

  /** Whether `queue` exists: the registry's answer, or on a miss the store's, as `view` sees it. */
  *exists(view: StoreView, queue: string): Op<boolean> {
    const { queues } = this.ctx;
    if (queues.exists(queue)) return true;
    // A queue a write still to commit deletes or creates is that write's to settle in the registry;
    // a name no queue can have is the caller's to refuse, and is never sent to the store.
    if (!this.shared || queues.isDeleting(queue) || queues.isCreating(queue)) return false;
    if (checkName('queue', queue, this.ctx.limits) !== null) return false;
    const watch = queues.watchChanges();
    let found: { paused: boolean; overrides: Partial<QueueSettingsFlat>; groups: boolean } | undefined;
    try {
      const row = yield* view.queues.find(queue);
      if (row === undefined) return false;
      const overrides: Record<string, unknown> = {};
      for (const setting of yield* view.settings.ofQueue(queue)) {
        const key = this.keyOf(setting.key);
        if (key !== undefined) overrides[key] = JSON.parse(setting.value_json);
      }
      found = { paused: row.paused, overrides, groups: row.has_groups };
    } finally {
      watch.stop();
    }
    if (!watch.changed.has(queue)) {
      queues.markExisting(queue, found.paused);
      queues.setOverrides(queue, found.overrides);
      if (found.groups) this.groupsFound(queue);
    }
    return true;
  }

  /**
   * Every stored queue the registry misses, looked up as `exists` looks one up, so that a
   * listing shows a queue another server just made at once rather than after this server's
   * next refresh. One read of the queue names (at most as many rows as there are queues) in
   * the listing's own view; nothing on a store no other server shares.
   */
  *findAll(view: StoreView): Op<void> {
    if (!this.shared) return;
    for (const { name } of yield* view.queues.all()) {
      if (!this.ctx.queues.exists(name)) yield* this.exists(view, name);
    }
  }

  /**
   * The same for a check made before the call's transaction: at once when the registry knows
   * the queue (or no store read could find it), else a read unit of its own.
   */
  existsNow(queue: string): boolean | Promise<boolean> {
    if (this.ctx.queues.exists(queue)) return true;
    if (!this.shared || checkName('queue', queue, this.ctx.limits) !== null) return false;
    return this.ctx.read((view) => this.exists(view, queue));
  }
}
