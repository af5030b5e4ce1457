/**
 * Caps the password checks (scrypt, ~32 MiB and tens of milliseconds each)
 * that run at once, so a burst of logins cannot take the machine's memory and
 * cores, and decides who goes next when more arrive than may run:
 *
 *   - Lanes, in order (the guard says which a check belongs in): addresses
 *     someone has logged in from before; addresses with no failed login on
 *     record; all others. A lane is served only when the ones before it are
 *     empty, so whatever floods the last lane, a login from a known address
 *     waits only for the checks already running, and one from a new address
 *     only for those and the first attempts of other new addresses (an
 *     address leaves the middle lane with its first counted attempt).
 *   - Within a lane, addresses take turns (round robin), so one address
 *     sending many logins does not push another's single login back.
 *   - Bounded: an address may have a few checks running or waiting, and the
 *     lanes after the first hold a fixed number of waiting checks between
 *     them; beyond that a login is refused at once (and nothing is checked
 *     or counted).
 */

/** Which lane a check waits in; lower goes first. */
export type CheckLane = 'known' | 'fresh' | 'other';

export interface CheckGatePolicy {
  /** Checks running at once. */
  maxRunning: number;
  /** Checks waiting in the `fresh` and `other` lanes together. */
  maxWaiting: number;
  /** Checks one address may have running or waiting. */
  maxPerClient: number;
}

/**
 * Two at a time leaves the libuv thread pool's other two threads for file and DNS work.
 * The waiting lane is long enough that a login from a new address waits its turn (one
 * check per other waiting address) rather than being refused while a flood fills it;
 * each waiting check is a small closure and the request it answers.
 */
export const defaultCheckGatePolicy: CheckGatePolicy = { maxRunning: 2, maxWaiting: 1024, maxPerClient: 4 };

type Start = () => void;

/** Waiting checks by address; map order is the turn order. */
class Lane {
  private readonly byClient = new Map<string, Start[]>();
  size = 0;

  push(client: string, start: Start): void {
    const list = this.byClient.get(client);
    if (list === undefined) this.byClient.set(client, [start]);
    else list.push(start);
    this.size++;
  }

  /** The first waiting check of the address whose turn it is; that address goes to the back. */
  take(): Start | undefined {
    for (const [client, list] of this.byClient) {
      const start = list.shift();
      this.byClient.delete(client);
      if (list.length > 0) this.byClient.set(client, list);
      if (start !== undefined) {
        this.size--;
        return start;
      }
    }
    return undefined;
  }
}

export class CheckGate {
  private running = 0;
  private readonly lanes: Record<CheckLane, Lane> = {
    known: new Lane(),
    fresh: new Lane(),
    other: new Lane(),
  };
  /** Checks running or waiting, by address. */
  private readonly perClient = new Map<string, number>();

  constructor(private readonly policy: CheckGatePolicy = defaultCheckGatePolicy) {}

  /** Checks running and waiting now (for diagnostics and tests). */
  load(): { running: number; waiting: number } {
    const { known, fresh, other } = this.lanes;
    return { running: this.running, waiting: known.size + fresh.size + other.size };
  }

  /**
   * Runs `work` once a slot is free and resolves with its result; returns
   * undefined at once (and never runs it) when the address or the lanes are full.
   */
  submit<T>(client: string, lane: CheckLane, work: () => Promise<T>): Promise<T> | undefined {
    const mine = this.perClient.get(client) ?? 0;
    if (mine >= this.policy.maxPerClient) return undefined;
    const mustWait = this.running >= this.policy.maxRunning;
    const waitingUnknown = this.lanes.fresh.size + this.lanes.other.size;
    if (mustWait && lane !== 'known' && waitingUnknown >= this.policy.maxWaiting) return undefined;
    this.perClient.set(client, mine + 1);
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running++;
        let result: Promise<T>;
        try {
          result = work();
        } catch (error) {
          result = Promise.reject(error);
        }
        result.then(resolve, reject).finally(() => this.finished(client));
      };
      if (!mustWait) start();
      else this.lanes[lane].push(client, start);
    });
  }

  private finished(client: string): void {
    this.running--;
    const left = (this.perClient.get(client) ?? 1) - 1;
    if (left > 0) this.perClient.set(client, left);
    else this.perClient.delete(client);
    const { known, fresh, other } = this.lanes;
    while (this.running < this.policy.maxRunning) {
      const next = known.take() ?? fresh.take() ?? other.take();
      if (next === undefined) break;
      next();
    }
  }
}
