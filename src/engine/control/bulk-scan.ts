/**
 * Where a bulk operation is in the jobs it reads: a cursor over index ranges
 * — every queue of the plan, every state, every type present (or the one
 * type), each range in enqueue order (jobs_by_state_type: queue, state, type,
 * seq); a state the store keeps in no index by type (`Browse.unindexedByType`:
 * PostgreSQL's leased jobs, each read of which reads them all) is one range per
 * queue, every type of the plan in it. Each step reads at most `scan` index
 * entries of one range and hands back their seqs, so a slice's cost is bounded
 * however many jobs match (for such a state: by how many are in it), and
 * the cursor only moves forward: nothing is read twice, and a filter the
 * indexes cannot answer never rescans what earlier slices passed over. Jobs
 * enqueued after the operation began (seq above `lastSeq`) are left alone, so
 * an operation ends even while producers keep enqueueing.
 */

import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { MatchCount } from '../control-types.ts';
import type { JobState } from '../types.ts';
import { type BulkPlan, hasResidual } from './bulk-filter.ts';

/** Type seeks one step may make before it hands back (a queue with very many types, few of them matching). */
const maxSeeksPerStep = 64;
const beyondTypes = '\u{10ffff}';

export interface ScanStep {
  queue: string;
  state: JobState;
  seqs: number[];
}

export class RangeCursor {
  private queueIndex = 0;
  private stateIndex = 0;
  /** The range being read (its type), or undefined: find the next type first. */
  private type: string | undefined;
  /** Where the search for the next type starts. */
  private typeFrom: string;
  private afterSeq = -1;
  /** Index entries read so far. */
  examined = 0;

  constructor(
    private readonly plan: BulkPlan,
    private readonly lastSeq: number,
  ) {
    this.typeFrom = plan.typePrefix;
  }

  get done(): boolean {
    return this.queueIndex >= this.plan.queues.length || this.plan.states.length === 0;
  }

  /**
   * The next at most `scan` seqs of the current range (possibly none, after
   * `maxSeeksPerStep` empty type seeks), or null when every range is read.
   */
  *next(view: StoreView, scan: number): Op<ScanStep | null> {
    let seeks = 0;
    while (!this.done) {
      const queue = this.plan.queues[this.queueIndex]!;
      const state = this.plan.states[this.stateIndex]!;
      if (view.browse.unindexedByType.has(state)) return yield* this.acrossTypes(view, queue, state, scan);
      if (this.type === undefined) {
        if (seeks++ >= maxSeeksPerStep) return { queue, state, seqs: [] };
        const type = yield* this.nextType(view, queue, state);
        if (type === undefined) {
          this.nextRange();
          continue;
        }
        this.type = type;
        this.afterSeq = -1;
      }
      const read = yield* view.browse.scanSeqs({
        queue,
        state,
        type: this.type,
        fromSeq: this.afterSeq,
        descending: false,
        scan,
      });
      this.examined += read.length;
      const seqs = read.filter((seq) => seq <= this.lastSeq);
      if (read.length < scan || seqs.length < read.length) {
        this.typeFrom = `${this.type}\u0000`;
        this.type = undefined;
        if (this.plan.type !== null) this.nextRange();
      } else {
        this.afterSeq = read.at(-1)!;
      }
      return { queue, state, seqs };
    }
    return null;
  }

  /** The next at most `scan` seqs of the queue and state's one range, every type of the plan in it. */
  private *acrossTypes(view: StoreView, queue: string, state: JobState, scan: number): Op<ScanStep> {
    const { type, typePrefix } = this.plan;
    const read = yield* view.browse.scanSeqsAcrossTypes({
      queues: [queue],
      state,
      type,
      typePrefix,
      fromSeq: this.afterSeq,
      descending: false,
      scan,
    });
    this.examined += read.length;
    const seqs = read.filter((seq) => seq <= this.lastSeq);
    if (read.length < scan || seqs.length < read.length) this.nextRange();
    else this.afterSeq = read.at(-1)!;
    return { queue, state, seqs };
  }

  private *nextType(view: StoreView, queue: string, state: JobState): Op<string | undefined> {
    if (this.plan.type !== null) return this.plan.type;
    const prefix = this.plan.typePrefix;
    return yield* view.browse.typeFrom({
      queue,
      state,
      fromType: this.typeFrom,
      belowType: `${prefix}${beyondTypes}`,
    });
  }

  /** On to the next state, or the next queue's first state. */
  private nextRange(): void {
    this.type = undefined;
    this.afterSeq = -1;
    this.typeFrom = this.plan.typePrefix;
    this.stateIndex++;
    if (this.stateIndex >= this.plan.states.length) {
      this.stateIndex = 0;
      this.queueIndex++;
    }
  }
}

/**
 * How many jobs the plan matches now. The counters answer a filter of queues
 * and states alone, an index range a type; any other filter is counted on at
 * most `budget` index entries, and the answer says whether it got to the end.
 * A leased job counts only without a cancel request (a cancel's one change to it).
 */
export function* countMatching(view: StoreView, plan: BulkPlan, budget: number): Op<MatchCount> {
  const residual = hasResidual(plan);
  const simple = plan.states.filter((s) => s !== 'leased' && !residual && plan.typePrefix === '');
  let matched = 0;
  for (const queue of plan.queues) {
    for (const state of simple) {
      matched +=
        plan.type === null
          ? yield* view.counts.inState({ queue, state })
          : yield* view.bulk.countOfType({ queue, state, type: plan.type });
    }
  }
  const scanned = plan.states.filter((s) => !simple.includes(s));
  if (scanned.length === 0) return { matched, exact: true, examined: 0 };
  const cursor = new RangeCursor({ ...plan, states: scanned }, Number.MAX_SAFE_INTEGER);
  for (;;) {
    const left = budget - cursor.examined;
    if (left <= 0) return { matched, exact: cursor.done, examined: cursor.examined };
    const step = yield* cursor.next(view, Math.min(left, 5000));
    if (step === null) return { matched, exact: true, examined: cursor.examined };
    matched += yield* view.bulk.countMatching({ ...plan.residual, seqs: step.seqs, state: step.state });
  }
}
