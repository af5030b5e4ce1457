/**
 * Answers of the HTTP API not yet sent, per API key and over the whole server. Each connection
 * is bounded (4 open requests, the write deadline), but a key that opens many connections and
 * reads each slowly — enough to stay within the write deadline — made the server hold up to
 * http.max_connections × 4 answers of up to 6 MiB: 100 such connections took a server from 130
 * to 331 MiB (attack6). gRPC holds its unary answers to budgets too (rpc/unsent-answers.ts).
 *
 * An answer is held from when it is encoded until its last byte was handed to the kernel, or
 * its connection closed; its bytes count in a budget (platform/byte-budget.ts) of its caller and
 * one of the server, as large as the request bodies' (`http.max_in_flight_bytes_per_key`,
 * `http.max_in_flight_bytes`) and apart from theirs. Callers without a key count as one.
 *
 * - Before its handler runs, a request is refused (429, `Retry-After`) when a budget has no
 *   room for the guess of its answer: the size of its key's last answer of the same operation
 *   (at least a byte). A key whose clients do not read, or whose answers overdrew its budget
 *   (below), has its next requests refused before they are carried out. From then until its
 *   answer is held (or it ends without one) the guess is kept for it, so requests let in
 *   together do not overrun the budgets when the guess holds, as gRPC's calls keep theirs. A
 *   long-poll keeps nothing while it waits (minutes, for jobs): a key's waiting reserves would
 *   refuse its other requests.
 * - An answer that still does not fit (answers larger than guessed, or long-polls let in
 *   together) is sent all the same when its request changed something that stays (an enqueue,
 *   an ack, a cancel: every POST but a reserve that leased jobs): refusing it would have its
 *   client repeat what was done. It overdraws the budgets until it is sent. Only a read (GET),
 *   which is harmless to repeat, or a reserve, whose jobs are given back (server.ts), is
 *   answered 429 instead.
 *
 * Guesses are per key: one key's large answers do not make the server keep more room for
 * another's. They live in the key's entry, which lives while its budget holds or keeps bytes
 * (an entry per key with answers in flight: at most the requests open, http.max_connections ×
 * 4, and one guess per JSON operation in each); a key's first request after its entry was let
 * go is admitted against an empty budget, which always has room.
 *
 * An answer always fits a budget that holds none, and a request is let in when a budget holds
 * and keeps none, so no answer is refused for ever. A budget holds at most its limit, one answer
 * larger than it, or what the answers of writes let in together overdrew: each was let in while
 * the budget had room for its guess, so the overdraft is at most the answers of the requests of
 * the key open at once (SECURITY.md gives the figures).
 */
import { SeppError } from '../engine/errors.ts';
import { ByteBudget } from '../platform/byte-budget.ts';

export interface UnsentAnswersLimits {
  readonly maxInFlightBytes: number;
  readonly maxInFlightBytesPerKey: number;
}

/** One request's room in the budgets: kept from when it is let in, then its answer held, until it ends. */
export interface AnswerRoom {
  /**
   * Holds its answer of `bytes` in place of the room kept. One that does not fit is held all the
   * same when `mustSend` (its request changed something that stays), else it is not: returns why.
   */
  hold(bytes: number, mustSend: boolean): SeppError | null;
  /** Gives back what it keeps or holds; once (its answer went out, its connection closed, it failed). */
  end(): void;
}

/** A key's budget and the guesses of its answers, which live and die with it. */
interface KeyAnswers {
  readonly budget: ByteBudget;
  /** The size of the key's last answer, by operation. */
  readonly lastAnswerBytes: Map<string, number>;
}

const MiB = 1024 * 1024;

export class UnsentAnswers {
  private readonly total: ByteBudget;
  private readonly byKey = new Map<string, KeyAnswers>();
  /** Requests refused since the start, before they ran or for their answer (metrics). */
  private refusedCount = 0;
  /** Answers held past a full budget since the start: their requests had changed something. */
  private overdrawnCount = 0;

  constructor(private readonly limits: UnsentAnswersLimits) {
    this.total = new ByteBudget('the server', limits.maxInFlightBytes, 'http.max_in_flight_bytes');
  }

  /**
   * The room of `key`'s request of `operation`, keeping the guess of its answer (nothing for a
   * long-poll); or why it may not run (a budget is full).
   */
  admit(key: string, operation: string, longPoll: boolean): AnswerRoom | SeppError {
    const own = this.byKey.get(key);
    const guessBytes = Math.max(1, own?.lastAnswerBytes.get(operation) ?? 0);
    const full = (own === undefined ? [this.total] : [own.budget, this.total]).find(
      (b) => !(b.used === 0 && b.kept === 0) && !b.fits(guessBytes),
    );
    if (full !== undefined) {
      this.refusedCount += 1;
      return refusal(full, 'the request was not carried out');
    }
    // A long-poll keeps nothing, and so does not keep its key's entry: its answer is held in the
    // entry the key has when it comes.
    const keptIn = longPoll ? [] : [this.entryOf(key).budget, this.total];
    let keptBytes = longPoll ? 0 : guessBytes;
    for (const b of keptIn) b.kept += keptBytes;
    let heldIn: ByteBudget[] = [];
    let heldBytes = 0;
    let ended = false;
    const unkeep = () => {
      for (const b of keptIn) b.kept -= keptBytes;
      keptBytes = 0;
    };
    return {
      hold: (bytes, mustSend) => {
        if (heldIn.length > 0) throw new Error('bug: an answer held twice');
        // Its connection closed first: there is nothing to send, and nothing to hold.
        if (ended) return null;
        unkeep();
        const entry = this.entryOf(key);
        entry.lastAnswerBytes.set(operation, bytes);
        const budgets = [entry.budget, this.total];
        const over = budgets.find((b) => !fits(b, bytes));
        if (over !== undefined && !mustSend) {
          this.forgetIfIdle(key);
          this.refusedCount += 1;
          return refusal(
            over,
            `the answer (${bytes} bytes) was not sent, though the request was carried out`,
          );
        }
        if (over !== undefined) this.overdrawnCount += 1;
        for (const b of budgets) b.take(bytes);
        heldIn = budgets;
        heldBytes = bytes;
        return null;
      },
      end: () => {
        if (ended) return;
        ended = true;
        unkeep();
        for (const b of heldIn) b.give(heldBytes);
        this.forgetIfIdle(key);
      },
    };
  }

  /** Requests refused since the start (`sepp_http_requests_refused_total`). */
  get refused(): number {
    return this.refusedCount;
  }

  /** Answers sent past a full budget since the start, their requests having changed something. */
  get overdrawn(): number {
    return this.overdrawnCount;
  }

  /** Bytes held now, over the server and for `key` (tests, diagnostics). */
  heldBytes(key: string): { total: number; key: number } {
    return { total: this.total.used, key: this.byKey.get(key)?.budget.used ?? 0 };
  }

  private entryOf(key: string): KeyAnswers {
    let entry = this.byKey.get(key);
    if (entry === undefined) {
      entry = {
        budget: new ByteBudget(
          `key ${key}`,
          this.limits.maxInFlightBytesPerKey,
          'http.max_in_flight_bytes_per_key',
        ),
        lastAnswerBytes: new Map(),
      };
      this.byKey.set(key, entry);
    }
    return entry;
  }

  /**
   * A key's entry whose budget holds and keeps nothing is let go, and its guesses with it: entries
   * are as many as keys with requests in flight.
   */
  private forgetIfIdle(key: string): void {
    const entry = this.byKey.get(key);
    if (entry === undefined || entry.budget.used > 0 || entry.budget.kept > 0) return;
    this.byKey.delete(key);
  }
}

/** Room for `bytes`, or nothing held: an answer always fits an empty budget. */
function fits(budget: ByteBudget, bytes: number): boolean {
  return budget.used === 0 || budget.fits(bytes);
}

function refusal(full: ByteBudget, what: string): SeppError {
  return new SeppError(
    'resource_exhausted',
    `${what}: answers not yet read by the client hold ${mib(full.used)} of ${full.owner}'s ` +
      `${mib(full.limitBytes)} (${full.setting}); read the answers of earlier requests, then try again`,
  );
}

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}
