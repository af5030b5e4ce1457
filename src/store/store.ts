/**
 * The Store: everything the engine keeps, as named, typed operations grouped
 * by capability. The engine describes storage work with them and never sees a
 * driver; a backend implements them (src/store/sqlite/ today) and proves it
 * with the conformance suite (tests/store/conformance/).
 *
 * How work runs (op.ts): an operation is a generator the engine composes with
 * `yield*` into a unit; `write(unit)` runs a unit in a transaction and resolves
 * after the commit that holds it is durable, `read(unit)` runs one against a
 * consistent view. An operation takes a parameter object (names with units) or
 * the one key it looks up, and returns plain rows (rows.ts) or values.
 *
 * The capabilities are defined in files of their own beside this one (queues.ts,
 * jobs.ts, leases.ts, job-control.ts, browse.ts, schedules.ts, operators.ts,
 * history.ts, dependencies.ts; signals.ts for a store several servers share);
 * this file composes them into units and the Store.
 *
 * Conventions every backend keeps:
 * - time is a parameter (`nowMs`); a store never reads the clock;
 * - a `limit` bounds what one call changes or returns; a `scan` bounds the
 *   index entries one read may examine;
 * - "as this transaction sees it": inside a write, reads see the unit's own
 *   changes and those of the units committed before it;
 * - rows a statement returns from an UPDATE or DELETE come in no particular
 *   order unless the operation says so.
 */

import type { Browse } from './browse.ts';
import type { Dependencies, DependencyReads } from './dependencies.ts';
import type { History, HistoryReads } from './history.ts';
import type { Bulk, BulkReads, Control, ControlReads, DeadLetterReads, DeadLetters } from './job-control.ts';
import type { JobReads, Jobs, KeyReads, Keys } from './jobs.ts';
import type { Flow, FlowReads, LeaseReads, Leases } from './leases.ts';
import type { Op } from './op.ts';
import type { Audit, AuditReads, SessionReads, Sessions } from './operators.ts';
import type { CountReads, Counts, QueueReads, Queues, SettingReads, Settings } from './queues.ts';
import type { ScheduleReads, Schedules } from './schedules.ts';
import type { StoreSignals } from './signals.ts';

// ---------------------------------------------------------------- units

/** What a read unit sees: every capability's reads, one consistent view. */
export interface StoreView {
  readonly queues: QueueReads;
  readonly counts: CountReads;
  readonly jobs: JobReads;
  readonly keys: KeyReads;
  readonly leases: LeaseReads;
  readonly flow: FlowReads;
  readonly control: ControlReads;
  readonly deadLetters: DeadLetterReads;
  readonly browse: Browse;
  readonly bulk: BulkReads;
  readonly schedules: ScheduleReads;
  readonly audit: AuditReads;
  readonly settings: SettingReads;
  readonly sessions: SessionReads;
  readonly history: HistoryReads;
  /** Job dependencies (dependencies.ts); undefined in a store without them. */
  readonly dependencies?: DependencyReads;
}

/** What a write unit works with: every capability, and the effects it registers with the store. */
export interface StoreTx extends StoreView {
  readonly queues: Queues;
  readonly counts: Counts;
  readonly jobs: Jobs;
  readonly keys: Keys;
  readonly leases: Leases;
  readonly flow: Flow;
  readonly control: Control;
  readonly bulk: Bulk;
  readonly deadLetters: DeadLetters;
  readonly schedules: Schedules;
  readonly audit: Audit;
  readonly settings: Settings;
  readonly sessions: Sessions;
  readonly history: History;
  readonly dependencies?: Dependencies;
  /** Runs `hook` once the commit that holds this unit is durable, before its caller is answered. */
  afterCommit(hook: () => void): void;
  /**
   * Runs `unit` after this one, only if this one succeeds, and commits it with
   * this one (SQLite: in the same batch, its own savepoint); resolves as write() does.
   */
  followUp<T>(unit: WriteUnit<T>): Promise<T>;
  /**
   * How durable this unit's commit must be before its caller is answered, for a
   * queue it wrote (its `durability` setting): `full` — on disk (fsync'd);
   * `relaxed` — may be answered first (survives a crash of the process, not a
   * power cut); `default` — as the store was opened (`server.durability`). A unit
   * that says nothing is `default`; of several calls the strictest wins, and a
   * commit is made durable when any unit in it needs that.
   */
  durability(mode: UnitDurability): void;
}

/** What a unit asks of its commit (StoreTx.durability). */
export type UnitDurability = 'default' | 'full' | 'relaxed';

/** A unit's ask after one more call: of two asks the stricter holds (full > default > relaxed). */
export function stricterDurability(asked: UnitDurability | undefined, mode: UnitDurability): UnitDurability {
  if (asked === 'full' || (asked === 'default' && mode === 'relaxed')) return asked;
  return mode;
}

/** Whether a unit that asked `asked` (undefined: nothing) needs its commit synced, on a store whose default is `defaultFull`. */
export function needsSync(asked: UnitDurability | undefined, defaultFull: boolean): boolean {
  return asked === 'full' || (asked !== 'relaxed' && defaultFull);
}

export type WriteUnit<T> = (tx: StoreTx) => Op<T>;
export type ReadUnit<T> = (view: StoreView) => Op<T>;

/**
 * The storage itself failed (an I/O error, a full disk, a lock held too long):
 * nothing the request asked for is to blame, and nothing of it was written.
 */
export class StorageFailure extends Error {
  override name = 'StorageFailure';
  /** The storage ran out of room (the engine frees its disk reserve and refuses enqueues). */
  readonly diskFull: boolean;
  /**
   * The failure stays until someone acts (the database refuses the store's login, a newer
   * sepp migrated the schema past this server): a repeat of a call helps only once someone
   * does, and its message says what. Clients are told so (gRPC `sepp-retry: operator`, no HTTP
   * Retry-After).
   */
  readonly lasting: boolean;
  /**
   * The failure in the driver's own words, with where the store is (PostgreSQL: a host, an
   * address and port), for the server's log only. `message`, which callers are answered
   * with, leaves that out: where the store is goes only to an admin key for every queue
   * (SECURITY.md).
   */
  readonly logMessage: string;

  constructor(
    message: string,
    options: { cause: unknown; diskFull: boolean; lasting?: boolean; logMessage?: string },
  ) {
    super(message, { cause: options.cause });
    this.diskFull = options.diskFull;
    this.lasting = options.lasting ?? false;
    this.logMessage = options.logMessage ?? message;
  }
}

/**
 * The words for the server's log of `error` (a SeppError, say) caused by a StorageFailure whose
 * log message says more than its answer (where the store is), or undefined.
 */
export function storageLogMessage(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++, cause = cause.cause) {
    if (cause instanceof StorageFailure)
      return cause.logMessage === cause.message ? undefined : cause.logMessage;
  }
  return undefined;
}

/**
 * A text the request gave that the storage cannot hold (PostgreSQL: a NUL character, or one
 * the database's encoding has not): the request's fault, not the storage's, and nothing was
 * written. The engine answers it as invalid_argument.
 */
export class TextRefused extends Error {
  override name = 'TextRefused';
}

/**
 * A read refused at once, before it waited: every read connection is busy and as many reads
 * as the store lets wait for one wait already (the PostgreSQL store's `store.max_waiting_reads`).
 * Nothing was read; the same read may work a moment later.
 */
export class ReadsRefused extends Error {
  override name = 'ReadsRefused';
}

/** What a write unit's caller is told when it goes wrong, and who watches the writes: the engine's part. */
export interface WriteHooks {
  /** The error every unit of a failed commit is rejected with. */
  commitFailed(failure: StorageFailure): Error;
  /** The error a unit that threw is rejected with (its own changes were rolled back). */
  unitFailed(error: unknown): Error;
  /** The error a write made after close() is rejected with. */
  closed(): Error;
  /** The error a read the store refused at once (ReadsRefused) is rejected with. */
  readsRefused?(refusal: ReadsRefused): Error;
  /** After each commit (SQLite: each batch), before its callers are answered. */
  afterCommit?(stats: CommitStats): void;
  /** An after-commit hook threw (a bug): the callers are answered anyway. */
  hookFailed?(error: unknown): void;
}

export interface CommitStats {
  /** Units in the commit. */
  operations: number;
  /** Wall time from the start of the transaction to the end of its commit. */
  durationMs: number;
  ok: boolean;
}

// ---------------------------------------------------------------- optional capabilities

/**
 * A copy of the live store to a file, while other work goes on (writes made meanwhile
 * are in it). A failure of the storage rejects with a StorageFailure; an error thrown
 * by `onProgress` stops the copy and rejects with that error.
 */
export interface OnlineBackup {
  copyTo(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void>;
}

/** Room kept on the data directory's file system for a full disk (src/engine/jobs/disk-full.ts uses it). */
export interface DiskReserve {
  /** The size of the reserve, in bytes (0: none is kept). */
  readonly bytes: number;
  /** Gives the reserve back to the file system; false when there was none. */
  release(): boolean;
  /** Free bytes on the data directory's file system. */
  freeBytes(): number;
  /** Bytes the store can fill again without growing its files (SQLite: the database's free pages). */
  reusableBytes(): number;
  /**
   * Gives back to the file system what the store holds but does not need, losing
   * nothing (SQLite: checkpoints the WAL and truncates it, unless checkpoints are
   * external); cheap to skip, not to call (a checkpoint).
   */
  reclaim(): void;
  /** Takes the reserve (again); false when there is no room for it. */
  take(): boolean;
}

/** The store's files on disk: their sizes now, for /metrics and the dashboard, and whether they are still its own. */
export interface StoreFiles {
  sizes(): { database: number; wal: number };
  /**
   * Checks now that the files the store writes are still the ones it opened;
   * null when they are, otherwise why writes are refused (readiness is false then).
   */
  problem(): string | null;
}

/**
 * Which store a server runs on and where its data is, for GetServerInfo and the
 * dashboard: never a password (a PostgreSQL URL holds none).
 */
export interface StoreDescription {
  kind: string;
  /** PostgreSQL: the database server, `host:port`; null for SQLite. */
  host: string | null;
  /** PostgreSQL: the database and the schema of sepp's tables; null for SQLite. */
  database: string | null;
  schema: string | null;
  /** PostgreSQL: whether this server hears the other servers' signals now (else it polls); null for SQLite. */
  signalsConnected: boolean | null;
  /**
   * PostgreSQL: the primary's replication when the server last connected to it
   * (docs/replication.md): whether a commit waits for a standby; null for SQLite.
   */
  replication: ReplicationMode | null;
  /** PostgreSQL: the standbys streaming from the primary then; null for SQLite. */
  standbys: number | null;
  /** PostgreSQL: the store's bounds as configured (store.*); null for SQLite. */
  poolSize: number | null;
  maxWaitingReads: number | null;
  maxWaitingReadsPerKey: number | null;
  statementTimeoutMs: number | null;
}

/**
 * A store described by its kind alone: nothing of where it is, its replication or its bounds.
 * A store that cannot say more (no `describe`), and what a caller that does not run the servers
 * is told of any store (GetServerInfo to a key other than an admin key for every queue, the
 * dashboard to a viewer: SECURITY.md).
 */
export function storeKindOnly(kind: string): StoreDescription {
  return {
    kind,
    host: null,
    database: null,
    schema: null,
    signalsConnected: null,
    replication: null,
    standbys: null,
    poolSize: null,
    maxWaitingReads: null,
    maxWaitingReadsPerKey: null,
    statementTimeoutMs: null,
  };
}

/** `synchronous`: commits wait for a standby; `asynchronous`: standbys, commits do not wait; `none`: no standby. */
export type ReplicationMode = 'synchronous' | 'asynchronous' | 'none';

/**
 * A store. `write` and `read` are the whole contract of the engine's work;
 * the optional capabilities are what some backends have (the SQLite store:
 * online backup, a disk reserve, its files); the engine answers
 * FAILED_PRECONDITION naming `kind` when asked for one a store lacks.
 */
export interface Store {
  /** What backend this is, for messages: `sqlite`. */
  readonly kind: string;
  /** The engine's part in every write; set once, before the first write. */
  attach(hooks: WriteHooks): void;
  /** Runs `unit` in a transaction; resolves with its result after the commit that holds it is durable. */
  write<T>(unit: WriteUnit<T>): Promise<T>;
  /** Runs `unit` against one consistent view of what is committed. */
  read<T>(unit: ReadUnit<T>): Promise<T>;
  /** Writes what is queued, refuses writes from now on, and releases the storage. */
  close(): Promise<void>;
  readonly backup?: OnlineBackup;
  readonly diskReserve?: DiskReserve;
  readonly files?: StoreFiles;
  /** Word between the servers sharing this store; absent when it is this server's alone. */
  readonly signals?: StoreSignals;
  /**
   * Reads that can wait for a connection: how many wait now, and how many read calls one
   * caller may have in flight while any do (the engine's ReadShares). Absent: reads never wait.
   */
  readonly readQueue?: {
    readonly waiting: number;
    readonly sharePerCaller: number;
    /** Reads refused since the store opened because as many waited already (the metrics' count). */
    readonly refusedTotal: number;
  };
  /** What it is and where its data is; absent: only `kind` is known. */
  describe?(): StoreDescription;
}
