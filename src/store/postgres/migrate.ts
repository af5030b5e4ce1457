/**
 * The PostgreSQL store's migrations (schema/postgres/NNNN_*.sql, embedded in
 * gen/migrations.ts), applied at start under a session advisory lock keyed by
 * the schema's name, so that servers starting together take turns: the first
 * applies what is missing, the others then find nothing to do (design note 0100,
 * section 10). Each migration runs in its own transaction with its row in
 * `schema_migrations`, with no statement timeout (`SET LOCAL statement_timeout = 0`): a
 * migration rewriting a big jobs table may take longer than store.statement_timeout_ms, and
 * failing it would fail every start. Waiting for the lock stays bounded by that timeout.
 * A schema newer than this binary is refused at start; while the server runs, the store
 * looks at the schema's version (`SchemaOps`) and refuses everything once a newer sepp
 * migrated it (a rolling upgrade that went ahead of this server: postgres-store.ts).
 */
import type pg from 'pg';
import { buildInfo } from '../../build-info.ts';
import type { Op } from '../op.ts';
import { schemaIdentifier } from './connect.ts';
import { type Migration, migrations } from './gen/migrations.ts';
import { type Connection, statement, value } from './sql.ts';

/** The schema was written by a newer sepp: this one refuses to guess at it. */
export class PostgresSchemaTooNewError extends Error {
  override name = 'PostgresSchemaTooNewError';
}

/** The newest migration this sepp knows. */
export const latestMigration = migrations.at(-1)?.version ?? 0;

/** The newest migration applied to the schema on the search_path (0 for none). */
const appliedVersionSql = 'SELECT coalesce(max(version), 0) AS v FROM schema_migrations';
const appliedVersion = statement(appliedVersionSql);

/** The version of the schema on `client`'s search_path, on a connection of its own (the writer's, as it connects). */
export async function schemaVersion(client: pg.Client): Promise<number> {
  const found = await client.query<{ v: number }>(appliedVersionSql);
  return found.rows[0]?.v ?? 0;
}

export interface SchemaOps {
  /** The version of the schema: its newest applied migration. */
  version(): Op<number>;
}

export function schemaOps(c: Connection): SchemaOps {
  return {
    *version() {
      return (yield* value<number>(c, appliedVersion, [])) ?? 0;
    },
  };
}

/** Why a running server refuses its store once a newer sepp migrated the schema `schema` to `version`. */
export function migratedWhileRunning(schema: string, version: number): string {
  return `the PostgreSQL schema "${schema}" was migrated to version ${version} by a newer sepp while this server ran; this sepp ${buildInfo.version} knows versions up to ${latestMigration}, so it reads and writes nothing more: stop it and run the newer sepp (docs/upgrading.md, "On PostgreSQL")`;
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
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const current = await client.query<{ version: number | null }>(
      `SELECT max(version) AS version FROM ${name}.schema_migrations`,
    );
    const version = current.rows[0]?.version ?? 0;
    const latest = available.at(-1)?.version ?? 0;
    if (version > latest) {
      throw new PostgresSchemaTooNewError(
        `the PostgreSQL schema "${name}" has version ${version}, written by a newer sepp; this sepp ${buildInfo.version} knows versions up to ${latest}: run the newer sepp`,
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
        await client.query(`INSERT INTO ${name}.schema_migrations (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name,
        ]);
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
