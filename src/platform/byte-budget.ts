/**
 * A budget of bytes: a limit, what is held now, and the waiters for room in
 * the order they came. Over gRPC, two things are held to budgets per
 * connection and per API key: requests' bytes in flight (below, and
 * rpc/bytes-in-flight.ts) and unary answers not yet sent
 * (rpc/unsent-answers.ts, which keeps room for calls that run and have not
 * answered: `kept`, and queues its own waiters). The HTTP API holds its
 * answers not yet sent to budgets per key and over the server
 * (http/unsent-answers.ts), without waiters: what does not fit is refused.
 *
 * Bytes of requests in flight, per connection and per API key (issue 29,
 * item 5). grpc-js reads a message whole, and decodes it, before a handler
 * sees it: 200 calls of 4 MiB with one key took a server from 106 to 1,150
 * MiB. The admission interceptor (admission.ts) follows each call's gRPC
 * frames and, as soon as a message's 5-byte prefix says how long it is,
 * reserves that many bytes from the budget of the call's connection and of
 * its caller before the rest of the message is read; when they do not fit it
 * stops reading that HTTP/2 stream (flow control then holds the client to
 * its window) until they do. A unary call gives its bytes back when it ends,
 * a stream when grpc-js hands the message to its handler.
 *
 * Waiters are served in the order they came, each budget's first waiter
 * before any later one, so small messages cannot starve a large one. A
 * waiter waits on its connection's and its caller's budget at once; waiters
 * join every queue they wait in at the same moment, so two waiters are in the
 * same order in every queue they share and no two can wait for each other.
 * Every budget holds at least one message of the largest size the server
 * accepts (config checks it), so a waiter alone always fits.
 */

/** One request's wait for room in one or more budgets. */
export interface BudgetWaiter {
  readonly bytes: number;
  readonly budgets: readonly ByteBudget[];
  readonly grant: () => void;
}

export class ByteBudget<Waiter = BudgetWaiter> {
  /** Bytes reserved now. */
  used = 0;
  /** The most ever reserved at once (tests, diagnostics). */
  peak = 0;
  /** Reservations that had to wait, since the start. */
  waited = 0;
  /** Room kept, not yet reserved: for what was let in and will take its bytes later. */
  kept = 0;
  readonly waiters: Waiter[] = [];

  constructor(
    /** What it is the budget of, for messages: `connection 127.0.0.1:5000`, `key producer`. */
    readonly owner: string,
    readonly limitBytes: number,
    /** The setting that sets its limit, for messages: `grpc.max_bytes_in_flight_per_key`. */
    readonly setting = '',
  ) {}

  fits(bytes: number): boolean {
    return this.used + this.kept + bytes <= this.limitBytes;
  }

  take(bytes: number): void {
    this.used += bytes;
    if (this.used > this.peak) this.peak = this.used;
  }

  /** Gives back `bytes` it took; more than it holds is a bug. */
  give(bytes: number): void {
    this.used -= bytes;
    if (this.used < 0) throw new Error(`bug: ${this.owner} gave back more bytes than it reserved`);
  }

  /** True while nothing is reserved or waiting: the budget may be forgotten. */
  get idle(): boolean {
    return this.used === 0 && this.waiters.length === 0;
  }
}

/**
 * Reserves `bytes` in every budget now if they fit and nobody waits there
 * before; else queues `grant` to run once they do. Returns the waiter (to
 * cancel it) or undefined when reserved at once.
 */
export function reserve(
  budgets: readonly ByteBudget[],
  bytes: number,
  grant: () => void,
): BudgetWaiter | undefined {
  if (budgets.every((b) => b.waiters.length === 0 && b.fits(bytes))) {
    for (const b of budgets) b.take(bytes);
    return undefined;
  }
  const waiter: BudgetWaiter = { bytes, budgets, grant };
  for (const b of budgets) {
    b.waiters.push(waiter);
    b.waited++;
  }
  return waiter;
}

/** Takes `bytes` whatever the budgets hold: for a message that has arrived whole already. */
export function force(budgets: readonly ByteBudget[], bytes: number): void {
  for (const b of budgets) b.take(bytes);
}

/** Gives `bytes` back to every budget and lets in the waiters that fit now. */
export function release(budgets: readonly ByteBudget[], bytes: number): void {
  for (const b of budgets) b.give(bytes);
  for (const b of budgets) admitWaiters(b);
}

/** Removes a waiter that no longer waits (its call ended); the ones behind it may fit now. */
export function cancel(waiter: BudgetWaiter): void {
  for (const b of waiter.budgets) {
    const at = b.waiters.indexOf(waiter);
    if (at >= 0) b.waiters.splice(at, 1);
  }
  for (const b of waiter.budgets) admitWaiters(b);
}

/** Grants the first waiters of `budget` while each is first in all its queues and fits all its budgets. */
function admitWaiters(budget: ByteBudget): void {
  for (;;) {
    const next = budget.waiters[0];
    if (next === undefined) return;
    const ready = next.budgets.every((b) => b.waiters[0] === next && b.fits(next.bytes));
    if (!ready) return;
    for (const b of next.budgets) {
      b.waiters.shift();
      b.take(next.bytes);
    }
    next.grant();
    // The other budgets it left may have waiters that fit now.
    for (const b of next.budgets) if (b !== budget) admitWaiters(b);
  }
}
