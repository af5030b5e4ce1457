/**
 * Answers produced and not yet sent, per connection and per API key. grpc-js
 * writes a unary call's answer whole to its HTTP/2 stream, where it waits
 * until the client's flow-control window lets it out: a client that opened
 * 1,000 GetJob calls for a 900 KB job on one connection with a zero window,
 * and never read, took a server from 98 to 1,057 MiB (attack5).
 *
 * The admission interceptor (admission.ts) counts each unary QueueService
 * answer's bytes from the moment its handler answers until its status goes
 * out (grpc-js sends a unary call's status once the answer's last byte was
 * taken by HTTP/2) or its stream closes, in a budget (platform/byte-budget.ts) of its connection and
 * one of its caller, as large as the request budgets
 * (`grpc.max_bytes_in_flight_per_connection`, `_per_key`):
 *
 * - a call runs only when both budgets have room for its answer, whose size
 *   is guessed as that of its key's last answer of the same method (until
 *   it had one, the method's last answer of any key; the largest
 *   size, `grpc.max_message_bytes`, until one was sent); else it waits,
 *   before it runs, until they have (its client's deadline or the end of
 *   its connection ends the wait). From when it runs until it answers, the
 *   guess is kept for it, so calls let in together do not overrun the
 *   budgets when the guess holds; a connection that reads its answers has
 *   small calls (an enqueue's answer is a few bytes) never wait;
 * - a write that lists items (EnqueueBatch, EnqueueAtomic, EnqueueFlow,
 *   AckBatch, CreateBatch, AddToBatch) then, once its request is decoded and before its handler has
 *   it, keeps room for the most it can answer (answer-bounds.ts, at most
 *   the largest size) in place of the guess, waiting as above until both
 *   budgets have it: its answer fits that room;
 * - an answer that does not fit (calls let in together whose answers came
 *   out larger than guessed) is sent all the same when its call changed
 *   something that stays (an Enqueue, an Ack, a CancelJob: every method but
 *   the reads, Get… and List…, and Reserve): refusing it would have its client
 *   repeat what was done. It overdraws the budgets until it is sent, and
 *   calls wait before they run until the budgets are back under their limits.
 *   A read's answer, harmless to repeat, or a Reserve's, whose jobs are given
 *   back (refused-answers.ts), is not sent: its call ends RESOURCE_EXHAUSTED
 *   (`sepp-retry: later`) instead, observed with that code. Every budget holds
 *   at least one answer of the largest size (config checks it), so an answer
 *   always fits an empty budget; a budget holds at most its limit, or what
 *   the answers of writes let in together overdrew: each was let in while the
 *   budget had room for its guess, so the overdraft is at most the answers of
 *   the calls open at once (a connection's grpc.max_streams_per_connection;
 *   SECURITY.md gives the figures).
 *
 * A waiting call waits first for its connection's budget, in the order the
 * connection's calls came, and only then, with the room of its connection
 * kept, for its key's, in the order of the key's calls: a connection whose
 * client reads nothing holds up its own calls, not those of the key's other
 * connections (until the key's budget itself is full).
 *
 * A Work stream's messages that carry leased jobs count in the same budgets
 * (`followStream`), from when the stream takes room for the jobs it leased
 * until grpc-js calls back their message's write (HTTP/2 took its last byte):
 * before it leases for its credit, a stream leases only as many jobs as the
 * room both budgets have (the engine's estimate of each job, answer-size.ts);
 * with none, it waits (its credit stays outstanding) until an answer of its
 * connection or key goes out. When neither budget holds anything, one job
 * goes through whatever its size, overdrawing them, so a job larger than a
 * budget is still delivered. A stream that ends gives back everything it holds
 * at once. Events and Backup wait for each message to be written.
 */
import { SeppError } from '../engine/errors.ts';
import { ByteBudget } from '../platform/byte-budget.ts';
import type { Connection } from './connections.ts';

/** The unary long-poll: its call waits for jobs, so room is not kept for its answer while it waits. */
const reservePath = '/sepp.v1.QueueService/Reserve';

/**
 * Whether a method's answer may be refused after it ran: a read (Get…, List…), harmless to
 * repeat, or Reserve, whose leases are undone. Any other method changed something that stays.
 */
export function refusableAfterRun(method: string): boolean {
  return method === reservePath || /\/(Get|List)[A-Z][^/]*$/.test(method);
}
export interface UnsentAnswersLimits {
  readonly maxBytesInFlightPerConnection: number;
  readonly maxBytesInFlightPerKey: number;
  /** The largest answer the server sends (grpc.max_message_bytes). */
  readonly maxMessageBytes: number;
}

export interface UnsentAnswersStats {
  /** Per caller: bytes held now, the most ever held at once. */
  readonly byKey: Readonly<Record<string, { usedBytes: number; peakBytes: number }>>;
  /** Over all connections: bytes held now, the most one connection ever held. */
  readonly connections: { readonly usedBytes: number; readonly peakBytes: number };
  /** Answers held now, over the whole server (a Work stream holding jobs counts as one). */
  readonly held: number;
  /** Calls waiting for room now, before they run. */
  readonly waiting: number;
  /** Calls that waited for room before they ran, and Work streams' waits for room, since the start. */
  readonly waited: number;
  /** Answers not sent because a budget was full, since the start. */
  readonly refused: number;
  /**
   * Answers sent past a full budget since the start: their calls had changed something
   * (`sepp_answers_beyond_room_total{sepp_door="grpc"}`).
   */
  readonly overdrawn: number;
}

/** One unary call's answer, as the admission interceptor reports it. */
export interface FollowedAnswer {
  /** Runs `run` (the call) now if both budgets have room for its answer (a guess), else once they have. */
  admit(run: () => void): void;
  /**
   * A write that lists items, once its request was decoded and before its handler has it: keeps
   * `bytes`, the most its answer can be (answerBytesMaxOf), in place of the guess, and runs `run`
   * (hands the request on) now if both budgets have room for it, else once they have.
   */
  reserve(bytes: number, run: () => void): void;
  /** Holds an answer of `bytes` until `finished`; or says why it is not sent. */
  hold(bytes: number): SeppError | null;
  /** The answer went out, or the call ended without it (a wait too): what it holds goes back. */
  finished(): void;
}

/**
 * The jobs a Work stream wrote and HTTP/2 did not send yet, in its connection's and key's budgets.
 * One take when a lease comes back, one give per message written: nothing per job.
 */
export interface StreamAnswers {
  /** The bytes both budgets have room for now; 0 while unary calls wait there for room. */
  room(): number;
  /** True while neither budget holds an answer nor keeps room: one job goes through, whatever its size. */
  empty(): boolean;
  /** Holds `bytes` of jobs leased for the stream (past a full budget too: `empty`, or a race of leases). */
  take(bytes: number): void;
  /** A message's jobs went out: `bytes` of what it held go back. */
  give(bytes: number): void;
  /** Calls `wake` once, the next time either budget gets bytes back (it waits for room). */
  whenRoom(wake: () => void): void;
  /** The stream ended: what it holds goes back at once, and its wait ends. */
  close(): void;
}

/**
 * The answers of one connection, or of one caller: bytes of answers held, and room kept
 * (`kept`) for calls that run and have not answered yet, the guess of each one's answer.
 */
type AnswerBudget = ByteBudget<Waiter>;

interface Waiter {
  /** The room the call needs: its reservation, else the guess of its answer. */
  readonly size: () => number;
  /** Lets the call past the budget it waits in, keeping `bytes` there for it. */
  readonly pass: (bytes: number) => void;
}

const MiB = 1024 * 1024;

export class UnsentAnswers {
  private readonly byConnection = new WeakMap<Connection, AnswerBudget>();
  private readonly byKey = new Map<string, AnswerBudget>();
  /** The size of each method's last answer, by path: the guess for a key that had none. */
  private readonly lastAnswerBytes = new Map<string, number>();
  /**
   * The size of each key's last answer of each method: one key's large answers do not make the
   * others' calls wait. As many as keys (from the configuration) times methods, as the key budgets.
   */
  private readonly lastAnswerBytesByKey = new Map<string, Map<string, number>>();
  /** Work streams waiting for room, by the budgets they wait in (a stream waits in both of its). */
  private readonly streamWaiters = new Map<AnswerBudget, Set<() => void>>();
  private connectionsUsedBytes = 0;
  private connectionsPeakBytes = 0;
  private held = 0;
  private waiting = 0;
  private waited = 0;
  private refused = 0;
  private overdrawn = 0;

  constructor(
    private readonly limits: UnsentAnswersLimits,
    /** Told of each answer not sent, by the caller's name (the log's `rpc.answers_refused`). */
    private readonly onRefused: (caller: string) => void = () => {},
  ) {}

  /** Follows a call of `method` (its path) on `connection` by `caller`. */
  follow(connection: Connection | undefined, caller: string, method: string): FollowedAnswer {
    const key = this.keyBudget(caller);
    const perConnection = connection === undefined ? undefined : this.connectionBudget(connection);
    /** The budgets a call passes before it runs, in this order. */
    const stages = perConnection === undefined ? [key] : [perConnection, key];
    /** The room kept for the answer in each stage's budget while the call runs. */
    const keptBytes = stages.map(() => 0);
    /** The answer's bytes while it is held. */
    let heldBytes: number | undefined;
    /** Where the call waits, and as what. */
    let waiting: { budget: AnswerBudget; waiter: Waiter } | undefined;
    let counted = false;
    let run: (() => void) | undefined;
    /** The room reserved for a write's answer, once its request was decoded. */
    let reservedBytes: number | undefined;
    /** A reservation asked for while the call still waited to run: made once it runs. */
    let deferred: (() => void) | undefined;
    /** The call ended (finished): nothing more is kept for it. */
    let over = false;
    const size = () => reservedBytes ?? this.guess(caller, method);
    const mustSend = !refusableAfterRun(method);
    const keep = (stage: number, bytes: number) => {
      const budget = stages[stage];
      if (budget === undefined) throw new Error('bug: no such stage');
      budget.kept += bytes;
      keptBytes[stage] = bytes;
    };
    const giveBackKept = () => {
      stages.forEach((b, stage) => {
        b.kept -= keptBytes[stage] ?? 0;
        keptBytes[stage] = 0;
      });
    };
    const stopCounting = () => {
      if (!counted) return;
      counted = false;
      this.waiting--;
    };
    /** Takes the call past the budgets from `first` on, or queues it where one has no room. */
    const enter = (first: number) => {
      for (let stage = first; stage < stages.length; stage++) {
        const budget = stages[stage];
        if (budget === undefined) break;
        const guess = size();
        if (budget.waiters.length > 0 || !budget.fits(guess)) {
          if (!counted) {
            counted = true;
            this.waited++;
            this.waiting++;
          }
          const waiter: Waiter = {
            size,
            pass: (kept) => {
              waiting = undefined;
              keep(stage, kept);
              enter(stage + 1);
            },
          };
          waiting = { budget, waiter };
          budget.waiters.push(waiter);
          return;
        }
        keep(stage, guess);
      }
      stopCounting();
      const go = run;
      run = undefined;
      go?.();
      // Its request came while it waited to run: its reservation is made now.
      const reserveNext = deferred;
      deferred = undefined;
      reserveNext?.();
    };
    const letInAll = () => {
      for (const b of stages) this.letIn(b);
    };
    const reserve = (bytes: number, call: () => void): void => {
      if (over || reservedBytes !== undefined || deferred !== undefined) return;
      // grpc-js may hand over the request while the call still waits to run.
      if (run !== undefined) {
        deferred = () => reserve(bytes, call);
        return;
      }
      giveBackKept();
      // Never more than the largest answer grpc-js sends: every budget has room for one alone.
      reservedBytes = Math.min(bytes, this.limits.maxMessageBytes);
      run = call;
      enter(0);
      // Its guess given back may let others in, where it now waits.
      letInAll();
    };
    return {
      admit: (call) => {
        run = call;
        enter(0);
      },
      reserve,
      hold: (bytes) => {
        // The call ended (its client went) while its handler ran: the answer goes nowhere, and
        // nothing would give back what it took (its room went back at `finished`).
        if (over) return null;
        giveBackKept();
        // At most the largest size (grpc-js refuses a larger answer): a guess always fits an empty budget.
        const sized = Math.min(bytes, this.limits.maxMessageBytes);
        this.lastAnswerBytes.set(method, sized);
        let own = this.lastAnswerBytesByKey.get(caller);
        if (own === undefined) {
          own = new Map();
          this.lastAnswerBytesByKey.set(caller, own);
        }
        own.set(method, sized);
        const full = stages.find((b) => b.used + bytes > b.limitBytes);
        // A write's answer within its reservation fits the room it kept: past it, a bound is wrong.
        if (full !== undefined && mustSend) this.overdrawn++;
        else if (full !== undefined) {
          this.refused++;
          this.onRefused(caller);
          letInAll();
          return new SeppError(
            'resource_exhausted',
            `the answer (${bytes} bytes) was not sent, though the call was carried out: answers not yet read ` +
              `by the client hold ${mib(full.used)} of ${full.owner}'s ${mib(full.limitBytes)} (${full.setting}); ` +
              'read the answers of earlier calls, then try again',
          );
        }
        for (const b of stages) b.take(bytes);
        heldBytes = bytes;
        this.held++;
        if (perConnection !== undefined) {
          this.connectionsUsedBytes += bytes;
          this.connectionsPeakBytes = Math.max(this.connectionsPeakBytes, perConnection.used);
        }
        letInAll();
        return null;
      },
      finished: () => {
        over = true;
        run = undefined;
        deferred = undefined;
        if (waiting !== undefined) {
          const { budget, waiter } = waiting;
          waiting = undefined;
          const at = budget.waiters.indexOf(waiter);
          if (at >= 0) budget.waiters.splice(at, 1);
        }
        stopCounting();
        giveBackKept();
        if (heldBytes !== undefined) {
          for (const b of stages) b.give(heldBytes);
          this.held--;
          if (perConnection !== undefined) this.connectionsUsedBytes -= heldBytes;
          heldBytes = undefined;
        }
        letInAll();
      },
    };
  }

  /** Follows the jobs a Work stream on `connection` by `caller` writes (StreamAnswers). */
  followStream(connection: Connection | undefined, caller: string): StreamAnswers {
    const key = this.keyBudget(caller);
    const perConnection = connection === undefined ? undefined : this.connectionBudget(connection);
    const stages = perConnection === undefined ? [key] : [perConnection, key];
    /** What the stream holds now, over both budgets alike. */
    let heldBytes = 0;
    let wake: (() => void) | undefined;
    let over = false;
    const stopWaiting = () => {
      if (wake === undefined) return;
      for (const b of stages) {
        const set = this.streamWaiters.get(b);
        set?.delete(wake);
        if (set?.size === 0) this.streamWaiters.delete(b);
      }
      wake = undefined;
    };
    const give = (bytes: number) => {
      if (bytes === 0) return;
      heldBytes -= bytes;
      for (const b of stages) b.give(bytes);
      if (perConnection !== undefined) this.connectionsUsedBytes -= bytes;
      if (heldBytes === 0) this.held--;
      for (const b of stages) this.letIn(b);
    };
    return {
      room: () => {
        let room = Number.POSITIVE_INFINITY;
        for (const b of stages) {
          if (b.waiters.length > 0) return 0;
          room = Math.min(room, b.limitBytes - b.used - b.kept);
        }
        return Math.max(0, room);
      },
      empty: () => stages.every((b) => b.used === 0 && b.kept === 0),
      take: (bytes) => {
        if (over || bytes === 0) return;
        if (stages.some((b) => b.used + bytes > b.limitBytes)) this.overdrawn++;
        // A stream holding jobs counts as one answer held.
        if (heldBytes === 0) this.held++;
        heldBytes += bytes;
        for (const b of stages) b.take(bytes);
        if (perConnection !== undefined) {
          this.connectionsUsedBytes += bytes;
          this.connectionsPeakBytes = Math.max(this.connectionsPeakBytes, perConnection.used);
        }
      },
      give: (bytes) => {
        if (!over) give(bytes);
      },
      whenRoom: (next) => {
        if (over) return;
        stopWaiting();
        this.waited++;
        const once = () => {
          stopWaiting();
          next();
        };
        wake = once;
        for (const b of stages) {
          let set = this.streamWaiters.get(b);
          if (set === undefined) {
            set = new Set();
            this.streamWaiters.set(b, set);
          }
          set.add(once);
        }
      },
      close: () => {
        if (over) return;
        over = true;
        stopWaiting();
        give(heldBytes);
      },
    };
  }

  stats(): UnsentAnswersStats {
    const byKey: Record<string, { usedBytes: number; peakBytes: number }> = {};
    for (const [name, b] of this.byKey) byKey[name] = { usedBytes: b.used, peakBytes: b.peak };
    return {
      byKey,
      connections: { usedBytes: this.connectionsUsedBytes, peakBytes: this.connectionsPeakBytes },
      held: this.held,
      waiting: this.waiting,
      waited: this.waited,
      refused: this.refused,
      overdrawn: this.overdrawn,
    };
  }

  /**
   * The guess of an answer of `method` to `caller`: the key's last answer's size, else the method's
   * last answer's of any key, the largest size until there was one.
   * A long-poll (Reserve) waits for jobs, not for room: its guess is 0, so parallel long-polls are
   * never held back by guesses (1,000 workers each waiting up to a minute), and its answer is checked
   * against what is held when it comes, as every answer is.
   */
  private guess(caller: string, method: string): number {
    if (method === reservePath) return 0;
    return (
      this.lastAnswerBytesByKey.get(caller)?.get(method) ??
      this.lastAnswerBytes.get(method) ??
      this.limits.maxMessageBytes
    );
  }

  /** Lets the first waiters of `budget` past it while it has room for each one's answer. */
  private letIn(budget: AnswerBudget): void {
    for (;;) {
      const next = budget.waiters[0];
      if (next === undefined) {
        if (this.streamWaiters.size > 0) this.wakeStreams(budget);
        return;
      }
      const guess = next.size();
      if (!budget.fits(guess)) return;
      budget.waiters.shift();
      next.pass(guess);
    }
  }

  /** Wakes the Work streams waiting in `budget` once its unary calls passed: they try again. */
  private wakeStreams(budget: AnswerBudget): void {
    const streams = this.streamWaiters.get(budget);
    if (streams === undefined || budget.waiters.length > 0) return;
    for (const wake of [...streams]) wake();
  }

  private keyBudget(caller: string): AnswerBudget {
    let budget = this.byKey.get(caller);
    if (budget === undefined) {
      budget = new ByteBudget<Waiter>(
        `key ${caller}`,
        this.limits.maxBytesInFlightPerKey,
        'grpc.max_bytes_in_flight_per_key',
      );
      this.byKey.set(caller, budget);
    }
    return budget;
  }

  private connectionBudget(connection: Connection): AnswerBudget {
    let budget = this.byConnection.get(connection);
    if (budget === undefined) {
      budget = new ByteBudget<Waiter>(
        'this connection',
        this.limits.maxBytesInFlightPerConnection,
        'grpc.max_bytes_in_flight_per_connection',
      );
      this.byConnection.set(connection, budget);
    }
    return budget;
  }
}

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}
