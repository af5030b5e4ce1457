/**
 * A Worker's held jobs: with `prefetch`, a job delivered while every slot of its
 * lane is busy is held (leased, its lease kept by the lease keeper like a running
 * one's, its handler not started) in its lane's queue, oldest first, until a slot
 * of that lane frees; so a lane's queue is empty whenever one of its slots is
 * free. A held job leaves its queue in one of four ways, each a method here:
 * it starts in a freed slot (`takeNext`), it is dropped unstarted when its lease
 * is cancelled, timed out or lost (`remove`), it is given back at close
 * (`takeToGiveBack`), or it is abandoned when close stops waiting (`takeAll`).
 * The Worker decides what each way means for the job (events, settlements,
 * credit); this module decides which jobs go and in what order.
 */
import { status } from '@grpc/grpc-js';
import { LeaseLostError } from './errors.ts';
import type { Active, Lane } from './worker-active.ts';
import type { WorkerClock } from './worker-clock.ts';

export class HeldJobs {
  /** Each lane's held jobs, oldest first, in the order of the worker's lanes; each array only changes in place. */
  private readonly queues = new Map<Lane, Active[]>();

  constructor(
    lanes: readonly Lane[],
    private readonly clock: WorkerClock,
  ) {
    for (const lane of lanes) this.queues.set(lane, []);
  }

  /** Jobs held on every lane. */
  get size(): number {
    let size = 0;
    for (const queue of this.queues.values()) size += queue.length;
    return size;
  }

  /** Jobs held on `lane`: its prefetch they take. */
  sizeOf(lane: Lane): number {
    return this.queueOf(lane).length;
  }

  /**
   * Holds a job delivered while every slot of its lane is busy, and answers true;
   * answers false, holding nothing, when the worker is closing (it goes back to
   * the queue at once) — unless `keepLastAttempts` (the server counts an attempt
   * for a job given back) and it is on its last attempt: held to run, as given
   * back it would go dead unstarted.
   */
  hold(active: Active, running: boolean, keepLastAttempts: boolean): boolean {
    if (!running && !(keepLastAttempts && active.job.isLastAttempt)) return false;
    this.queueOf(active.lane).push(active);
    return true;
  }

  /** Takes a job out of its lane's queue (cancelled, timed out or lost: it never runs); false if it was not held. */
  remove(active: Active): boolean {
    const queue = this.queueOf(active.lane);
    const at = queue.indexOf(active);
    if (at < 0) return false;
    queue.splice(at, 1);
    return true;
  }

  /**
   * Takes out the lane's oldest held job whose lease is still ours by the worker's
   * reckoning, to start it in a slot just freed. One whose lease ran out unextended
   * (every extend failed or is still unanswered) may already be leased to another
   * worker: it is taken out too but never started, handed to `ranOut` with the
   * error saying so (the server retries it once the lease has ended), and the next
   * one is tried.
   */
  takeNext(lane: Lane, ranOut: (active: Active, error: LeaseLostError) => void): Active | undefined {
    const queue = this.queueOf(lane);
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      if (this.clock.nowMs() < next.leaseEndsAtMs) return next;
      const { id, attempt } = next.job;
      ranOut(
        next,
        new LeaseLostError(
          status.FAILED_PRECONDITION,
          `job ${id} attempt ${attempt}: its lease ran out while it waited for a slot (no extend got through); not started here, the server retries it`,
          { code: 'lease_lost' },
        ),
      );
    }
    return undefined;
  }

  /**
   * At close: takes out the held jobs to give back to the queue now, for other
   * workers, rather than when their leases end: all of them (a give-back counts no
   * attempt), or with `keepLastAttempts` (a server that counts one) all but those
   * on their last attempt, which stay to run.
   */
  takeToGiveBack(keepLastAttempts: boolean): Active[] {
    if (!keepLastAttempts) return this.takeAll();
    const given: Active[] = [];
    for (const queue of this.queues.values()) {
      given.push(...queue.filter((active) => !active.job.isLastAttempt));
      // In place: a `takeNext` whose `ranOut` listener closed the worker still walks this queue.
      queue.splice(0, queue.length, ...queue.filter((active) => active.job.isLastAttempt));
    }
    return given;
  }

  /** Takes out every held job (to give back at close, or close stopped waiting: they will not start now). */
  takeAll(): Active[] {
    const all: Active[] = [];
    for (const queue of this.queues.values()) all.push(...queue.splice(0));
    return all;
  }

  private queueOf(lane: Lane): Active[] {
    const queue = this.queues.get(lane);
    if (queue === undefined) throw new Error('sepp worker bug: a lane the held jobs do not know');
    return queue;
  }
}
