/**
 * The batch members whose handlers run in this process, the lease each runs under, and the
 * server that leased it: the server accepts an add to a sealed batch `fromMember` only with
 * the secret token of the member's current lease (`fromMemberToken`), which only its worker
 * was handed. A Worker notes a member while its handler runs, so `addToBatch(job.batchId,
 * jobs, { fromMember: job.id })` proves itself through any Client of the process connected to
 * the same target as that Worker (a handler may add through a producer key's Client while a
 * worker key's Client leases).
 *
 * The lease's attempt is kept too and sent along (`fromMemberAttempt`): a server of this
 * version ignores it, but one older than lease tokens asks for it, so workers upgraded before
 * their servers still add (docs/upgrading.md, "To schema 31").
 *
 * Neither goes to another target, never to another server the process also talks to (a
 * staging server, another deployment, a typo'd address): not the token, a secret, nor the
 * attempt, which is none but would let an older server of another deployment accept the add.
 * A target is the address exactly as configured plus how it is reached (plaintext, or TLS and
 * the name its certificate is checked against). Two spellings of one server
 * (`localhost:50051`, `127.0.0.1:50051`) are two targets: the add then carries neither and
 * the server refuses it, which fails closed. No answer of a server decides it: a server could
 * claim another's identity.
 */

/** The lease a member's handler runs under. */
export interface RunningLease {
  /** Empty from a server older than lease tokens. */
  readonly token: string;
  readonly attempt: number;
}

/** jobId → target → the lease the member's handler runs under. */
const running = new Map<string, Map<string, RunningLease>>();

/**
 * The target a connection reaches (see above), as a key and for messages: the address as
 * configured, then `(plaintext)`, `(TLS)` or `(TLS, server name NAME)`.
 */
export function targetOf(address: string, tls: { serverName?: string } | true | undefined): string {
  if (tls === undefined) return `${address} (plaintext)`;
  if (tls === true || tls.serverName === undefined) return `${address} (TLS)`;
  return `${address} (TLS, server name ${tls.serverName})`;
}

/**
 * Notes that the handler of batch member `jobId`, leased from `target`, runs under `lease`;
 * returns what forgets it.
 */
export function memberRuns(target: string, jobId: string, lease: RunningLease): () => void {
  let leases = running.get(jobId);
  if (leases === undefined) {
    leases = new Map();
    running.set(jobId, leases);
  }
  leases.set(target, lease);
  return () => {
    const now = running.get(jobId);
    if (now?.get(target) !== lease) return;
    now.delete(target);
    if (now.size === 0) running.delete(jobId);
  };
}

/** The lease a handler of member `jobId` leased from `target` runs under in this process; undefined when none runs. */
export function runningLease(target: string, jobId: string): RunningLease | undefined {
  return running.get(jobId)?.get(target);
}

/** The targets whose workers run a handler of member `jobId` in this process now (for messages). */
export function runningTargets(jobId: string): string[] {
  return [...(running.get(jobId)?.keys() ?? [])];
}
