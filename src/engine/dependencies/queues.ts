/**
 * The queues whose leases pass results on: those that have had a job waiting on others
 * (`queues.has_dependencies`, set in the unit of that job's enqueue, loaded at open). A
 * lease of any other queue reads nothing more than it did before dependencies existed.
 *
 * On a store other servers share (PostgreSQL: `shared`), another server may have enqueued
 * such a job into any queue since this one loaded the set, so every lease asks the store,
 * which knows from the leased rows' own `dependency_flags` which jobs wait on others and
 * reads edges for those only (no round trip for a lease without them).
 */
import type { Op } from '../../store/op.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';

export class DependencyQueues {
  private readonly names = new Set<string>();

  /** `shared`: other servers enqueue into the same store (they mark queues this set never hears of). */
  constructor(private readonly shared = false) {}

  *load(view: StoreView): Op<void> {
    if (view.dependencies === undefined) return;
    for (const name of yield* view.dependencies.queuesWithDependencies()) this.names.add(name);
  }

  /** Whether any queue has had a job waiting on others (a server that runs workflows). */
  get any(): boolean {
    return this.names.size > 0;
  }

  has(queue: string): boolean {
    return this.shared || (this.names.size > 0 && this.names.has(queue));
  }

  /** A job waiting on others was added to `queue` in `tx` (a store with dependencies). */
  *jobAdded(tx: StoreTx, queue: string): Op<void> {
    if (this.names.has(queue) || tx.dependencies === undefined) return;
    yield* tx.dependencies.markQueue(queue);
    tx.afterCommit(() => this.names.add(queue));
  }
}
