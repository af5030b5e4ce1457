/**
 * The seq of the jobs leased in queues that run workflows, by job id, from their lease to
 * their ack. An ack names its job by id only; with the seq the lease returned, the store can
 * find a kept job's row by rowid instead of through the id index (SQLite: 0.75-0.77× of the
 * kept completion's statement, docs/decisions/0012 (l)). A seq is a hint: the store still
 * checks the id, so a stale one (its lease's unit rolled back, or the entry outlived its job)
 * costs a miss, which the Settler answers as any other.
 *
 * Only queues in DependencyQueues are remembered, so W1's lease and ack never touch it.
 * Bounded: past `maxEntries` the oldest entry goes (a lease that expired, or was settled over
 * a path that does not take its entry, leaves one behind until then).
 */
export class LeasedSeqs {
  private readonly byId = new Map<string, number>();

  constructor(private readonly maxEntries = 65_536) {}

  get size(): number {
    return this.byId.size;
  }

  /** Remembers the seq of a job just leased. */
  remember(jobId: string, seq: number): void {
    if (this.byId.size >= this.maxEntries && !this.byId.has(jobId)) {
      // The oldest first: Map keeps insertion order.
      const oldest = this.byId.keys().next();
      if (oldest.done !== true) this.byId.delete(oldest.value);
    }
    this.byId.set(jobId, seq);
  }

  /** The seq of a leased job (undefined when not remembered), forgotten: its ack is being settled. */
  take(jobId: string): number | undefined {
    const seq = this.byId.get(jobId);
    if (seq !== undefined) this.byId.delete(jobId);
    return seq;
  }
}
