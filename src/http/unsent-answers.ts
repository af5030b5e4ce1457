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
 *   (at least a byte). A key whose clients do not read has its next requests refused before
 *   they are carried out. From then until its
 *   answer is held (or it ends without one) the guess is kept for it, so requests let in
 *   together do not overrun the budgets when the guess holds, as gRPC's calls keep theirs. A
 *   long-poll keeps nothing while it waits (minutes, for jobs): a key's waiting reserves would
 *   refuse its other requests.
 * - A write (every POST but a reserve) then, once its body was parsed and before it runs,
 *   keeps room for the most its answer can be (answer-bounds.ts) in place of the guess, or is
 *   refused then (429, having done nothing: safe to repeat). Its answer fits that room, and is
 *   sent: refusing it after the write ran would have its client repeat what was done.
 * - Any other answer that does not fit (one larger than guessed, or long-polls answered
 *   together) is not sent: a read (GET) is harmless to repeat, and a reserve's jobs are given
 *   back (server.ts). Its request is answered 429.
 * - A write's answer larger than its reservation would be a wrong bound (a bug): it is sent all
 *   the same, overdrawing the budgets when they are full, counted (`overdrawn`) and told
 *   (server.ts logs it once at warn).
 *
 * Guesses are per key: one key's large answers do not make the server keep more room for
 * another's. They live in the key's entry, which lives while its budget holds or keeps bytes
 * (an entry per key with answers in flight: at most the requests open, http.max_connections ×
 * 4, and one guess per JSON operation in each); a key's first request after its entry was let
 * go is admitted against an empty budget, which always has room.
 *
 * A budget that holds and keeps nothing has room for anything, and a request is let in when a
 * budget holds and keeps none, so no request is refused for ever. Everything else is let in,
 * reserved or held only when it fits beside what the budget holds and keeps: a budget holds at
 * most its limit, or one answer larger than it alone (SECURITY.md gives the figures).
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
   * A write's room, once its request was parsed and before it runs: keeps `bytes`, the most its
   * answer can be (answer-bounds.ts), in place of the guess; or says why it may not run.
   */
  reserve(bytes: number): SeppError | null;
  /**
   * Holds its answer of `bytes` in place of the room kept. A write's (reserved) is held whatever
   * the budgets hold: its request changed something that stays. Any other that does not fit is
   * not: returns why.
   */
  hold(bytes: number): SeppError | null;
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
  /** Answers of writes held past a full budget since the start: larger than their reservation. */
  private overdrawnCount = 0;

  constructor(
    private readonly limits: UnsentAnswersLimits,
    /**
     * Told of a write's answer larger than the room reserved for it: a bound of answer-bounds.ts
     * is wrong (a bug). It is sent all the same, overdrawing the budgets if they are full.
     */
    private readonly onBeyondReservation: (
      operation: string,
      bytes: number,
      reservedBytes: number,
    ) => void = () => {},
  ) {
    this.total = new ByteBudget('the server', limits.maxInFlightBytes, 'http.max_in_flight_bytes');
  }

  /**
   * The room of `key`'s request of `operation`, keeping the guess of its answer (nothing for a
   * long-poll); or why it may not run (a budget is full).
   */
  admit(key: string, operation: string, longPoll: boolean): AnswerRoom | SeppError {
    const own = this.byKey.get(key);
    const guessBytes = Math.max(1, own?.lastAnswerBytes.get(operation) ?? 0);
    const full = this.noRoom(own === undefined ? [this.total] : [own.budget, this.total], guessBytes);
    if (full !== undefined) return this.refuse(full, 'the request was not carried out');
    // A long-poll keeps nothing, and so does not keep its key's entry: its answer is held in the
    // entry the key has when it comes.
    const keptIn = longPoll ? [] : [this.entryOf(key).budget, this.total];
    let keptBytes = longPoll ? 0 : guessBytes;
    for (const b of keptIn) b.kept += keptBytes;
    let reservedBytes: number | undefined;
    let heldIn: ByteBudget[] = [];
    let heldBytes = 0;
    let ended = false;
    const unkeep = () => {
      for (const b of keptIn) b.kept -= keptBytes;
      keptBytes = 0;
    };
    return {
      reserve: (bytes) => {
        if (longPoll || reservedBytes !== undefined) throw new Error('bug: a reservation out of turn');
        // Its connection closed first: its answer will not be held, and keeps nothing.
        if (ended) return null;
        unkeep();
        const noRoom = this.noRoom(keptIn, bytes);
        if (noRoom !== undefined) return this.refuse(noRoom, 'the request was not carried out');
        reservedBytes = bytes;
        keptBytes = bytes;
        for (const b of keptIn) b.kept += keptBytes;
        return null;
      },
      hold: (bytes) => {
        if (heldIn.length > 0) throw new Error('bug: an answer held twice');
        // Its connection closed first: there is nothing to send, and nothing to hold.
        if (ended) return null;
        unkeep();
        const entry = this.entryOf(key);
        entry.lastAnswerBytes.set(operation, bytes);
        const budgets = [entry.budget, this.total];
        const over = this.noRoom(budgets, bytes);
        if (over !== undefined && reservedBytes === undefined) {
          this.forgetIfIdle(key);
          return this.refuse(
            over,
            `the answer (${bytes} bytes) was not sent, though the request was carried out`,
          );
        }
        // Within its reservation a write's answer fits: the room was kept for it.
        if (reservedBytes !== undefined && bytes > reservedBytes) {
          this.onBeyondReservation(operation, bytes, reservedBytes);
          if (over !== undefined) this.overdrawnCount += 1;
        }
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

  /**
   * Writes' answers sent past a full budget since the start: larger than their reservation (a
   * bug; never, while the bounds of answer-bounds.ts hold). `sepp_answers_beyond_room_total{sepp_door="http"}`.
   */
  get overdrawn(): number {
    return this.overdrawnCount;
  }

  /** Bytes held now, over the server and for `key` (tests, diagnostics). */
  heldBytes(key: string): { total: number; key: number } {
    return { total: this.total.used, key: this.byKey.get(key)?.budget.used ?? 0 };
  }

  /**
   * The first of `budgets` without room for `bytes`. A budget that holds and keeps nothing has
   * room for anything: no request is refused for ever.
   */
  private noRoom(budgets: readonly ByteBudget[], bytes: number): ByteBudget | undefined {
    return budgets.find((b) => !(b.used === 0 && b.kept === 0) && !b.fits(bytes));
  }

  private refuse(full: ByteBudget, what: string): SeppError {
    this.refusedCount += 1;
    return refusal(full, what);
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
