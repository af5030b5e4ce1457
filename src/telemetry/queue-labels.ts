/**
 * The queue names metrics may carry as a label: a cardinality limit. The first
 * `max` queues the metrics see (in events, or in name order at a collection)
 * keep their own series for as long as the server runs; every queue after
 * them is reported under the one label value `(other)`, so a flood of queue
 * names cannot grow the series, the memory they hold or the `/metrics` text
 * without bound (docs/observability.md).
 */

/** The label value of every queue past the limit. */
export const otherQueuesLabel = '(other)';

/** Queues with series of their own (docs/observability.md). */
export const labelledQueuesMax = 200;

export class QueueLabels {
  private readonly labelled = new Set<string>();

  constructor(private readonly max: number = labelledQueuesMax) {}

  /** The label value for `queue`: its name while there is room or it has one already, else `(other)`. */
  of(queue: string): string {
    if (this.labelled.has(queue)) return queue;
    if (this.labelled.size >= this.max) return otherQueuesLabel;
    this.labelled.add(queue);
    return queue;
  }
}
