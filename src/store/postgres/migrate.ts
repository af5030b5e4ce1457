/**
 * The PostgreSQL store's migrations (schema/postgres/NNNN_*.sql, embedded in
 * gen/migrations.ts), applied at start under a session advisory lock keyed by
 * the schema's name, so that servers starting together take turns: the first
 * applies what is missing, the others then find nothing to do (design note 0100,
 * section 10). Each migration runs in its own transaction with its row in
 * `schema_migrations`, with no statement timeout (`SET LOCAL statement_timeout = 0`): a
 * migration rewriting a big jobs table may take longer than store.statement_timeout_ms, and
 * failing it would fail every start. Waiting for the lock stays bounded by that timeout.
 * Each migration's row also records its rule, `servers_from` (its `-- servers-from:` line):
 * the oldest schema version whose servers may keep running on the schema it makes. The
 * database's rule is the greatest of them (`SchemaRule`), so a server reads it from the
 * database without knowing the newer migrations: one whose version is older is refused at
 * start, and, while it runs, the store looks at the rule (`SchemaOps`) and refuses everything
 * once a newer sepp's migration excluded it (postgres-store.ts). A row without a rule (written
 * before `servers_from` existed) counts as its own version: only servers knowing it. A
 * migration may admit older servers only if what they write stays whole without it: an index,
 * a function they never call, a repair of data. Not a column or table they would leave
 * unfilled, nor a column of `batches`, which they read with prepared `SELECT *` statements
 * (PostgreSQL fails those once the table's columns change).
 */
import type pg from 'pg';
import { buildInfo } from '../../build-info.ts';
import type { Op } from '../op.ts';
import { schemaIdentifier } from './connect.ts';
import { type Migration, migrations } from './gen/migrations.ts';
import { type Connection, firstRow, statement } from './sql.ts';

/** The schema was written by a newer sepp: this one refuses to guess at it. */
export class PostgresSchemaTooNewError extends Error {
  override name = 'PostgresSchemaTooNewError';
}

/** The newest migration this sepp knows. */
export const latestMigration = migrations.at(-1)?.version ?? 0;

/** A schema's version (its newest applied migration) and the oldest version whose servers may run on it. */
export interface SchemaRule {
  version: number;
  serversFrom: number;
}

/** The rule of the schema `table` is in (0 and 0 for none; see the top of this file). */
const schemaRuleSql = (table: string) =>
  `SELECT coalesce(max(version), 0) AS version, coalesce(max(coalesce(servers_from, version)), 0) AS "serversFrom"
     FROM ${table}`;
const schemaRuleStatement = statement(schemaRuleSql('schema_migrations'));

/** The rule of the schema on `client`'s search_path (or `schema`), on a connection of its own. */
export async function schemaRule(client: pg.Client, schema?: string): Promise<SchemaRule> {
  const table = schema === undefined ? 'schema_migrations' : `${schema}.schema_migrations`;
  const found = await client.query<SchemaRule>(schemaRuleSql(table));
  return found.rows[0] ?? { version: 0, serversFrom: 0 };
}

/**
 * Adds `servers_from` to a schema_migrations made before it, once, with the rules of the
 * migrations this sepp knows (a newer one's row keeps none: it counts as its own version).
 */
async function addRules(client: pg.Client, schema: string, available: readonly Migration[]): Promise<void> {
  const found = await client.query(
    `SELECT 1 FROM pg_attribute
      WHERE attrelid = '${schema}.schema_migrations'::regclass AND attname = 'servers_from' AND NOT attisdropped`,
  );
  if (found.rowCount !== 0) return;
  await client.query('BEGIN');
  try {
    await client.query(
      `ALTER TABLE ${schema}.schema_migrations ADD COLUMN IF NOT EXISTS servers_from integer`,
    );
    await client.query(
      `UPDATE ${schema}.schema_migrations m SET servers_from = r.servers_from
         FROM unnest($1::integer[], $2::integer[]) AS r(version, servers_from) WHERE m.version = r.version`,
      [available.map((m) => m.version), available.map((m) => m.serversFrom)],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

export interface SchemaOps {
  /** The schema's version and rule. */
  rule(): Op<SchemaRule>;
}

export function schemaOps(c: Connection): SchemaOps {
  return {
    *rule() {
      return (yield* firstRow<SchemaRule>(c, schemaRuleStatement, [])) ?? { version: 0, serversFrom: 0 };
    },
  };
}

/** Whether this sepp may run on a schema with `rule`: its newest migration is at least the rule's oldest version. */
export function mayRunOn(rule: SchemaRule, latest = latestMigration): boolean {
  return rule.serversFrom <= latest;
}

/** Why a running server refuses its store once a newer sepp migrated the schema `schema` past it. */
export function migratedWhileRunning(schema: string, rule: SchemaRule): string {
  return `the PostgreSQL schema "${schema}" was migrated to version ${rule.version} by a newer sepp while this server ran, whose migrations let servers of schema version ${rule.serversFrom} or later run on it; this sepp ${buildInfo.version} knows versions up to ${latestMigration}, so it reads and writes nothing more: stop it and run the newer sepp (docs/upgrading.md, "On PostgreSQL")`;
}

export interface AppliedMigration {
  version: number;
  name: string;
  durationMs: number;
}

/** The advisory lock's key: one per schema, in the two-int space (the shard slots use another). */
const migrationLockClass = 0x5e99;

/** Applies the migrations the schema lacks, oldest first, on `client` (connected); returns what it applied. */
export async function migrate(
  client: pg.Client,
  schema: string,
  available: readonly Migration[] = migrations,
): Promise<AppliedMigration[]> {
  const name = schemaIdentifier(schema);
  await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [migrationLockClass, name]);
  try {
    // CREATE SCHEMA IF NOT EXISTS asks for CREATE on the database even when the schema is
    // there: a role given only a schema of its own (docs/postgres.md, least privilege) would
    // be refused. So the schema is created only when it is missing.
    const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${name}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${name}.schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
         servers_from integer)`,
    );
    await addRules(client, name, available);
    const rule = await schemaRule(client, name);
    const { version } = rule;
    const latest = available.at(-1)?.version ?? 0;
    if (!mayRunOn(rule, latest)) {
      throw new PostgresSchemaTooNewError(
        `the PostgreSQL schema "${name}" has version ${version}, written by a newer sepp whose migrations let servers of schema version ${rule.serversFrom} or later run on it; this sepp ${buildInfo.version} knows versions up to ${latest}: run the newer sepp`,
      );
    }
    const applied: AppliedMigration[] = [];
    for (const migration of available) {
      if (migration.version <= version) continue;
      const startedMs = performance.now();
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path = ${name}`);
        await client.query('SET LOCAL statement_timeout = 0');
        await client.query(migration.sql);
        await client.query(
          `INSERT INTO ${name}.schema_migrations (version, name, servers_from) VALUES ($1, $2, $3)`,
          [migration.version, migration.name, migration.serversFrom],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      applied.push({
        version: migration.version,
        name: migration.name,
        durationMs: Math.round(performance.now() - startedMs),
      });
    }
    return applied;
  } finally {
    await client
      .query('SELECT pg_advisory_unlock($1, hashtext($2))', [migrationLockClass, name])
      .catch(() => {});
  }
}
