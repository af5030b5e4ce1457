/**
 * Connections to PostgreSQL: every one is made the same way (the store's schema
 * on its search_path, the statement timeout, numbers as numbers), and every
 * failure of the database or the network becomes a StorageFailure, so the
 * engine can tell "the storage failed, nothing was written" from a refused
 * request.
 */
import pg, { type QueryResult } from 'pg';
import { parsePostgresUrl } from '../postgres-url.ts';
import { StorageFailure, TextRefused } from '../store.ts';
import type { Connection, Statement, WriteTransaction } from './sql.ts';

export interface PostgresConnectOptions {
  /**
   * postgres:// URL without the password: one host, or several with `target_session_attrs`
   * (src/store/postgres-url.ts); a connection is made to one host at a time (`connectPostgres`).
   */
  readonly url: string;
  /** The password, or null when the server asks for none. */
  readonly password: string | null;
  /** The PostgreSQL schema of sepp's tables (an identifier: lower-case letters, digits, _). */
  readonly schema: string;
  readonly statementTimeoutMs: number;
  /** How long a connection attempt may take. */
  readonly connectTimeoutMs?: number;
  /**
   * Send each query without waiting for the answers of those before it (the writer's
   * connection: its BEGIN, savepoints and count deltas travel with the next statement).
   */
  readonly pipeline?: boolean;
}

/** int8 (counts, ids, times in ms) and numeric (sums) as JavaScript numbers: every value sepp stores fits. */
const numberOids = new Set([20, 1700]);
/** One parser for them all (the driver asks for a column's parser with every result). */
const toNumber = (text: string) => Number(text);
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    numberOids.has(oid) && format !== 'binary'
      ? toNumber
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** How long a connection attempt may take unless the caller says otherwise. */
export const defaultConnectTimeoutMs = 10_000;

const identifierRe = /^[a-z_][a-z0-9_]{0,62}$/;

/** The schema's name as an identifier; anything else is refused (the config checks it first). */
export function schemaIdentifier(schema: string): string {
  if (!identifierRe.test(schema)) throw new Error(`the schema name "${schema}" is not a plain identifier`);
  return schema;
}

/**
 * A client connected to the first host of `options.url` that answers and, with
 * `target_session_attrs=read-write`, accepts writes (`SHOW transaction_read_only` is off:
 * not a standby, nor a primary made read-only). Hosts are tried in the order given, as
 * libpq does; when none fits, the error names each host and why (no password in it).
 */
export async function connectPostgres(
  options: PostgresConnectOptions,
  onError: (error: Error) => void,
): Promise<pg.Client> {
  const target = parsePostgresUrl(options.url);
  if (target instanceof Error) throw new Error(`store.url ${target.message}`);
  const refusals: string[] = [];
  for (const { host, url } of target.hosts) {
    const client = newClient({ ...options, url }, onError);
    try {
      await client.connect();
      await client.query(sessionSettings(options));
      if (target.targetSessionAttrs === 'read-write') {
        const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
        if (rows[0]?.transaction_read_only !== 'off') {
          refusals.push(`${host}: read-only`);
          await client.end().catch(() => {});
          continue;
        }
      }
      return client;
    } catch (error) {
      await client.end().catch(() => {});
      if (target.hosts.length === 1) throw error;
      refusals.push(`${host}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const wanted = target.targetSessionAttrs === 'read-write' ? 'accepts writes' : 'answers';
  throw new NoHostFits(
    `no PostgreSQL host ${wanted} (${refusals.join('; ')})`,
    target.hosts.map(({ host }) => host),
  );
}

/**
 * The schema on the search_path and the statement timeout, set by a statement once the
 * connection is made rather than as startup parameters: PgBouncer refuses a connection that
 * sends `options` or `statement_timeout` in its startup packet ("unsupported startup
 * parameter"), even in session mode (docs/postgres.md, "Sizing").
 *
 * The same timeout, but never less than `idleInTransactionFloorMs`, bounds how long a
 * transaction of this session may sit idle: a server frozen in the middle of one (SIGSTOP, a
 * paused VM, a debugger) held the rows it had locked — jobs picked by a lease not yet
 * committed, leases being settled — and every other server skipped them (`SKIP LOCKED`) for
 * as long as it stayed frozen. PostgreSQL now ends such a session and rolls its transaction
 * back. sepp's own transactions are idle only between two of their statements, but that gap
 * is the event loop's: a stall of the process (a long garbage collection, a busy loop, a
 * machine swapping) would end a healthy session — and fail its whole batch — if a small
 * statement timeout (down to 100 ms) bounded it too; hence the floor.
 */
function sessionSettings(options: PostgresConnectOptions): string {
  const timeoutMs = Math.trunc(options.statementTimeoutMs);
  const idleMs = Math.max(timeoutMs, idleInTransactionFloorMs);
  return `SET search_path = ${schemaIdentifier(options.schema)}; SET statement_timeout = ${timeoutMs}; SET idle_in_transaction_session_timeout = ${idleMs}`;
}

/** The least idle_in_transaction_session_timeout a session is given (sessionSettings). */
const idleInTransactionFloorMs = 10_000;

/** A new client of a single-host URL, not yet connected; its errors while idle are handed to `onError`. */
function newClient(options: PostgresConnectOptions, onError: (error: Error) => void): pg.Client {
  const client = new pg.Client({
    connectionString: options.url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? defaultConnectTimeoutMs,
    application_name: 'sepp',
    keepAlive: true,
    pipeline: options.pipeline === true,
    types,
  });
  // Set after the URL was read: the driver takes a URL's (empty) password over one given beside it.
  if (options.password !== null) client.password = options.password;
  // A connection that breaks while idle emits 'error': it is dropped, never a crash.
  client.on('error', onError);
  return client;
}

/**
 * SQLSTATE classes that mean the storage failed, not the request: connection
 * (08), transaction rollback (40: serialization failure, deadlock), insufficient
 * resources (53: 53100 is a full disk), operator intervention (57: a statement
 * timeout, a shutdown), system error (58), internal error (XX).
 */
const storageClasses = new Set(['08', '40', '53', '57', '58', 'XX']);
/**
 * And one state of its own: 25006, a write refused by a read-only server, is what a
 * connection to a former primary answers once it came back as a standby (a failover):
 * the connection is dropped and the next one looks for the host that accepts writes.
 */
const storageStates = new Set(['25006']);

/** The SQLSTATE of a driver's error, if it has one. */
export function sqlState(error: unknown): string | undefined {
  if (!(error instanceof Error) || !('code' in error)) return undefined;
  const code = String(error.code);
  return /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether an error of the driver means the storage failed (one without a SQLSTATE is the network's). */
function isStorageError(error: unknown): boolean {
  if (error instanceof StorageFailure) return true;
  const state = sqlState(error);
  return state === undefined || storageClasses.has(state.slice(0, 2)) || storageStates.has(state);
}

/**
 * SQLSTATEs that mean a text of the request cannot be stored: 22021 (character_not_in_repertoire:
 * a NUL in a text, or bytes that are no UTF-8) and 22P05 (untranslatable_character: a \u0000 in
 * JSON). SQLite keeps such a text, or matches nothing with it; PostgreSQL refuses the statement.
 */
const refusedTextStates = new Set(['22021', '22P05']);

/** A driver's error as the Store interface reports it: a storage failure, a refused text, or itself. */
function storeError(error: unknown): unknown {
  if (isStorageError(error)) return storageFailure(error);
  const state = sqlState(error);
  if (state === undefined || !refusedTextStates.has(state)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TextRefused(
    `PostgreSQL cannot store a text of the request (${message}): a NUL character (\\0) or one the database's encoding cannot hold; leave it out`,
    { cause: error },
  );
}

/**
 * A failure of the storage as the Store interface reports it: the message names no secret, nor
 * where the store is (callers are answered with it); its log message, for the server's log,
 * does (`StorageFailure.logMessage`).
 */
export function storageFailure(cause: unknown): StorageFailure {
  if (cause instanceof StorageFailure) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  const advice = refusedLoginAdvice(cause, message);
  return new StorageFailure(`PostgreSQL: ${withoutWhere(message, cause)}${advice}`, {
    cause,
    diskFull: sqlState(cause) === '53100',
    lasting: advice !== '',
    logMessage: `PostgreSQL: ${message}${advice}`,
  });
}

/** What stands in an answer for where the store is. */
const hiddenWhere = '<store address>';
/** IPv4 addresses, and IPv6 ones (two colons at least), each with its port if it has one. */
const addressRe =
  /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[?[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\]?(?::\d+)?/gi;

/**
 * `message` without where the store is: the host names and addresses the driver's error
 * (and the errors it gathers) says it tried, the hosts of `NoHostFits`, and any IP address.
 * PostgreSQL's own words (a SQLSTATE's message) name no host of the store's.
 */
export function withoutWhere(message: string, cause: unknown): string {
  const names = new Set<string>();
  gatherWhere(cause, names, 0);
  let text = message;
  for (const name of [...names].sort((a, b) => b.length - a.length)) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    text = text.replace(new RegExp(`(?<![\\w.-])${escaped}(?![\\w-])`, 'g'), hiddenWhere);
  }
  return text.replace(addressRe, hiddenWhere).replace(/<store address>:\d+/g, hiddenWhere);
}

/** The host names and addresses an error of the driver or the network names (a few levels deep). */
function gatherWhere(error: unknown, names: Set<string>, depth: number): void {
  if (depth > 3 || typeof error !== 'object' || error === null) return;
  const fields = error as { address?: unknown; hostname?: unknown; host?: unknown; hosts?: unknown };
  for (const value of [fields.address, fields.hostname, fields.host]) {
    if (typeof value === 'string' && value.length > 0) names.add(value);
  }
  if (Array.isArray(fields.hosts)) {
    for (const host of fields.hosts) {
      if (typeof host !== 'string' || host.length === 0) continue;
      names.add(host);
      const bare = host.replace(/:\d+$/, '');
      if (bare.length > 0) names.add(bare.replace(/^\[(.*)\]$/, '$1'));
    }
  }
  if (error instanceof AggregateError) for (const inner of error.errors) gatherWhere(inner, names, depth + 1);
  if (error instanceof Error) gatherWhere(error.cause, names, depth + 1);
}

/** No host of a store.url of several hosts fits (each host's reason in the message). */
class NoHostFits extends Error {
  override name = 'NoHostFits';

  constructor(
    message: string,
    /** The hosts tried, as written in store.url (`host:port`). */
    readonly hosts: readonly string[],
  ) {
    super(message);
  }
}

/**
 * What to do when PostgreSQL refuses the store's login while the server runs (a
 * reconnect after a restart or a failover): a wrong or expired password does not
 * mend itself, so a repeat is no help. PostgreSQL answers an expired password
 * (VALID UNTIL) with the words of a wrong one; only its own log tells them apart.
 * Several hosts: each host's reason is in the message, so its words are matched.
 */
function refusedLoginAdvice(cause: unknown, message: string): string {
  if (sqlState(cause) !== '28P01' && !/password authentication failed/.test(message)) return '';
  return (
    " — no repeat helps until the login works: the role's password has expired (VALID UNTIL) or is not the one" +
    ' in store.password_file or store.password_env; extend it in PostgreSQL (ALTER ROLE … VALID UNTIL …), or set' +
    " a new one there and in that file or variable and restart sepp (PostgreSQL's log says which of the two)"
  );
}

/** Pipelined clients whose socket is corked until the end of this turn (coalesce). */
const corked = new WeakSet<pg.Client>();

/**
 * On a pipelined client (the writer's), holds what is written during this turn of the
 * event loop and sends it as one write when the turn's callbacks are done: the BEGIN,
 * savepoints and count deltas sent ahead go out with the statement a unit waits for in
 * one system call, and wake the backend once (the driver writes each simple query with a
 * write(2) of its own: a drained batch took ~8 writes, now ~3). A client that waits for
 * each answer before it sends the next gains nothing from it and is left alone.
 */
function coalesce(client: pg.Client): void {
  if (!(client as { pipeline?: boolean }).pipeline || corked.has(client)) return;
  const socket = client.connection.stream;
  corked.add(client);
  socket.cork();
  process.nextTick(() => {
    corked.delete(client);
    socket.uncork();
  });
}

/**
 * Sends a command of the store's own (BEGIN, SAVEPOINT, COMMIT); its failures are the storage's.
 * Answers the command's tag (`COMMIT`; `ROLLBACK` when a COMMIT found its transaction failed).
 */
export function command(client: pg.Client, text: string): Promise<string | undefined> {
  coalesce(client);
  return client.query(text).then(
    (result: pg.QueryResult | pg.QueryResult[]) => (Array.isArray(result) ? result.at(-1) : result)?.command,
    (error: unknown) => {
      throw isStorageError(error) ? storageFailure(error) : error;
    },
  );
}

const needsEscape = /["\\]/;

/**
 * A parameter as the driver sends it, with an array of strings, numbers and nulls (the ids,
 * attempts and columns the statements take as arrays) written as PostgreSQL's array literal
 * here: the same text the driver would write (every element quoted, `\\` and `"` escaped),
 * without its two regular expressions per element. Any other value is left to the driver.
 */
function parameter(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  let text = '{';
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (i > 0) text += ',';
    if (item === null || item === undefined) text += 'NULL';
    else if (typeof item === 'number') text += `"${item}"`;
    else if (typeof item === 'string')
      text += needsEscape.test(item) ? `"${item.replace(/[\\"]/g, '\\$&')}"` : `"${item}"`;
    else return value;
  }
  return `${text}}`;
}

/**
 * A connection for the operations: a statement's storage failure rejects as a StorageFailure.
 * With `transaction` (the writer's), it counts the statements sent; with `sentAhead` (the
 * writer's pipelined connection), it can send a statement without waiting for its answer.
 */
export function connectionOf(
  client: pg.Client,
  deltas: Connection['deltas'],
  transaction?: WriteTransaction,
  sentAhead?: (answer: Promise<unknown>) => void,
): Connection {
  const sent = (s: Statement, values: readonly unknown[]): Promise<QueryResult> => {
    if (transaction !== undefined) transaction.statements++;
    coalesce(client);
    const query: pg.QueryConfig = { name: s.name, text: s.text, values: values.map(parameter) };
    if (s.rowMode === 'array') (query as pg.QueryArrayConfig).rowMode = 'array';
    return client.query(query).catch((error: unknown) => {
      throw storeError(error);
    });
  };
  const connection: Connection = {
    deltas,
    transaction,
    send(s: Statement, values: readonly unknown[]) {
      const waits = transaction?.waits;
      if (waits === undefined) return sent(s, values);
      // A benchmark traces the writer: the round trip of a statement a unit waits for.
      const sentMs = performance.now();
      const answer = sent(s, values);
      const counted = () => {
        waits.count++;
        waits.ms += performance.now() - sentMs;
      };
      answer.then(counted, counted);
      return answer;
    },
  };
  if (sentAhead === undefined) return connection;
  return { ...connection, sendAhead: (s, values) => sentAhead(sent(s, values)) };
}
