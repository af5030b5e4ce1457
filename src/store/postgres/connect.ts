/**
 * Connections to PostgreSQL: every one is made the same way (the store's schema
 * on its search_path, the statement timeout, numbers as numbers), and every
 * failure of the database or the network becomes a StorageFailure, so the
 * engine can tell "the storage failed, nothing was written" from a refused
 * request.
 */
import pg from 'pg';
import { StorageFailure } from '../store.ts';
import type { Connection, Statement } from './sql.ts';

export interface PostgresConnectOptions {
  /** postgres:// URL without the password. */
  readonly url: string;
  /** The password, or null when the server asks for none. */
  readonly password: string | null;
  /** The PostgreSQL schema of sepp's tables (an identifier: lower-case letters, digits, _). */
  readonly schema: string;
  readonly statementTimeoutMs: number;
  /** How long a connection attempt may take. */
  readonly connectTimeoutMs?: number;
}

/** int8 (counts, ids, times in ms) and numeric (sums) as JavaScript numbers: every value sepp stores fits. */
const numberOids = new Set([20, 1700]);
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    numberOids.has(oid) && format !== 'binary'
      ? (text: string) => Number(text)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

const identifierRe = /^[a-z_][a-z0-9_]{0,62}$/;

/** The schema's name as an identifier; anything else is refused (the config checks it first). */
export function schemaIdentifier(schema: string): string {
  if (!identifierRe.test(schema)) throw new Error(`the schema name "${schema}" is not a plain identifier`);
  return schema;
}

/** A new client, not yet connected; its errors while idle are handed to `onError`. */
export function newClient(options: PostgresConnectOptions, onError: (error: Error) => void): pg.Client {
  const client = new pg.Client({
    connectionString: options.url,
    options: `-c search_path=${schemaIdentifier(options.schema)}`,
    statement_timeout: options.statementTimeoutMs,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: 'sepp',
    keepAlive: true,
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

function sqlState(error: unknown): string | undefined {
  if (!(error instanceof Error) || !('code' in error)) return undefined;
  const code = String(error.code);
  return /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether an error of the driver means the storage failed (one without a SQLSTATE is the network's). */
function isStorageError(error: unknown): boolean {
  if (error instanceof StorageFailure) return true;
  const state = sqlState(error);
  return state === undefined || storageClasses.has(state.slice(0, 2));
}

/** A failure of the storage as the Store interface reports it; the message names no secret. */
export function storageFailure(cause: unknown): StorageFailure {
  if (cause instanceof StorageFailure) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new StorageFailure(`PostgreSQL: ${message}`, { cause, diskFull: sqlState(cause) === '53100' });
}

/** Sends a command of the store's own (BEGIN, SAVEPOINT, COMMIT); its failures are the storage's. */
export function command(client: pg.Client, text: string): Promise<void> {
  return client.query(text).then(
    () => undefined,
    (error: unknown) => {
      throw isStorageError(error) ? storageFailure(error) : error;
    },
  );
}

/** A connection for the operations: a statement's storage failure rejects as a StorageFailure. */
export function connectionOf(client: pg.Client, deltas: Connection['deltas']): Connection {
  return {
    deltas,
    send(s: Statement, values: readonly unknown[]) {
      return client.query({ name: s.name, text: s.text, values: [...values] }).catch((error: unknown) => {
        throw isStorageError(error) ? storageFailure(error) : error;
      });
    },
  };
}
