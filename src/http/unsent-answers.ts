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
 *   room for the last answer of its operation (a guess, at least a byte): a key whose clients
 *   do not read has its next requests refused before they are carried out. From then until
 *   its answer is held (or it ends without one) the guess is kept for it, so requests let in
 *   together do not overrun the budgets when the guess holds, as gRPC's calls keep theirs. A
 *   long-poll keeps nothing while it waits (minutes, for jobs): a key's waiting reserves would
 *   refuse its other requests.
 * - An answer that still does not fit (answers larger than guessed, or long-polls let in
 *   together) is not sent: the request, which was carried out, is answered 429 instead, and a
 *   reserve gives its jobs back (server.ts).
 *
 * An answer always fits a budget that holds none, and a request is let in when a budget holds
 * and keeps none, so no answer is refused for ever: a budget holds at most its limit, or one
 * answer larger than it.
 */
import { SeppError } from '../engine/errors.ts';
import { ByteBudget } from '../platform/byte-budget.ts';

export interface UnsentAnswersLimits {
  readonly maxInFlightBytes: number;
  readonly maxInFlightBytesPerKey: number;
}

const MiB = 1024 * 1024;

export class UnsentAnswers {
  private readonly total: ByteBudget;
  private readonly byKey = new Map<string, ByteBudget>();
  /** The size of each operation's last answer. */
  private readonly lastAnswerBytes = new Map<string, number>();
  /** Requests refused since the start, before they ran or for their answer (metrics). */
  private refusedCount = 0;

  constructor(private readonly limits: UnsentAnswersLimits) {
    this.total = new ByteBudget('the server', limits.maxInFlightBytes, 'http.max_in_flight_bytes');
  }

  /**
   * Why `key`'s request of `operation` may not run (its budget is full), or what gives back the
   * room kept for its answer (once; before its answer is held, or when it ends without one).
   * A long-poll keeps none.
   */
  admit(key: string, operation: string, longPoll: boolean): SeppError | (() => void) {
    const guessBytes = Math.max(1, this.lastAnswerBytes.get(operation) ?? 0);
    const own = this.byKey.get(key);
    const full = (own === undefined ? [this.total] : [own, this.total]).find(
      (b) => !(b.used === 0 && b.kept === 0) && !b.fits(guessBytes),
    );
    if (full !== undefined) {
      this.refusedCount += 1;
      return refusal(full, 'the request was not carried out');
    }
    if (longPoll) return () => {};
    const budgets = this.budgetsOf(key);
    for (const b of budgets) b.kept += guessBytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      for (const b of budgets) b.kept -= guessBytes;
      this.forgetIfIdle(key);
    };
  }

  /**
   * Holds an answer of `bytes` of `key` to `operation`; returns what gives it back (once), or why
   * it is not sent.
   */
  hold(key: string, operation: string, bytes: number): (() => void) | SeppError {
    this.lastAnswerBytes.set(operation, bytes);
    const budgets = this.budgetsOf(key);
    const full = budgets.find((b) => !fits(b, bytes));
    if (full !== undefined) {
      this.forgetIfIdle(key);
      this.refusedCount += 1;
      return refusal(full, `the answer (${bytes} bytes) was not sent, though the request was carried out`);
    }
    for (const b of budgets) b.take(bytes);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      for (const b of budgets) b.give(bytes);
      this.forgetIfIdle(key);
    };
  }

  /** Requests refused since the start (`sepp_http_requests_refused_total`). */
  get refused(): number {
    return this.refusedCount;
  }

  private budgetsOf(key: string): [ByteBudget, ByteBudget] {
    let budget = this.byKey.get(key);
    if (budget === undefined) {
      budget = new ByteBudget(
        `key ${key}`,
        this.limits.maxInFlightBytesPerKey,
        'http.max_in_flight_bytes_per_key',
      );
      this.byKey.set(key, budget);
    }
    return [budget, this.total];
  }

  /** A key's budget that holds and keeps nothing is let go: budgets are as many as keys with answers. */
  private forgetIfIdle(key: string): void {
    const budget = this.byKey.get(key);
    if (budget === undefined || budget.used > 0 || budget.kept > 0) return;
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
