/**
 * What the PostgreSQL benchmarks (pg-counters.ts, pg-enqueue-in-transaction.ts) share:
 * their command line — `--runs`, `--seconds`, `--clients` and `--help`, plus options of
 * their own — checked into positive integers, and a set of connected `pg` clients.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import pg from 'pg';
import type { PostgresCluster } from '../../tests/helpers/postgres.ts';

/** `raw` as a positive integer, or an error naming `--name`. */
export function positiveInteger(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

export interface PgBenchArgs {
  readonly runs: number;
  readonly durationMs: number;
  readonly clients: number;
  /** The benchmark's own options, as parseArgs gave them. */
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
}

/**
 * Parses the command line: `--runs` (default 3), `--seconds` (default 5), `--clients`
 * (`defaultClients`) and `own`; `--help` prints `usage` and exits.
 */
export function pgBenchArgs(
  usage: string,
  defaultClients: number,
  own: NonNullable<ParseArgsConfig['options']> = {},
): PgBenchArgs {
  const values: Readonly<Record<string, string | boolean | undefined>> = parseArgs({
    options: {
      runs: { type: 'string', default: '3' },
      seconds: { type: 'string', default: '5' },
      clients: { type: 'string', default: String(defaultClients) },
      help: { type: 'boolean', default: false },
      ...own,
    },
  }).values;
  if (values.help === true) {
    console.log(usage);
    process.exit(0);
  }
  const integer = (name: string) => positiveInteger(name, String(values[name]));
  return {
    runs: integer('runs'),
    durationMs: integer('seconds') * 1000,
    clients: integer('clients'),
    values,
  };
}

/** `count` clients connected to `database` (default `postgres`) of `cluster`. */
export function connectClients(
  cluster: PostgresCluster,
  count: number,
  database?: string,
): Promise<pg.Client[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const client = new pg.Client(cluster.connection(database));
      await client.connect();
      return client;
    }),
  );
}
