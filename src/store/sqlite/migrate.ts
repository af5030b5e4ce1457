/**
 * Applies the embedded migrations (schema/NNNN_*.sql, generated into
 * gen/migrations.ts) in order, tracked by PRAGMA user_version, each in its own
 * transaction. A database newer than this binary is refused rather than guessed at.
 *
 * A migration that turns `writable_schema` on edits a table's definition in
 * sqlite_schema (SQLite's documented way to widen a CHECK constraint without
 * copying the table, https://www.sqlite.org/lang_altertable.html#otheralter). It
 * runs with better-sqlite3's defensive mode off (which otherwise forbids writing
 * sqlite_schema), and then, as that procedure asks, schema_version is bumped in
 * the same transaction so that every connection parses the new definition
 * (this one included: the schema is read again before the commit, so a
 * definition that does not parse fails the migration and rolls it back). The
 * edit must be the migration's last change to that table: ALTER TABLE works
 * from the parsed definition, which only the bump refreshes.
 */
import type Database from 'better-sqlite3';
import { buildInfo } from '../../build-info.ts';
import { type Migration, migrations } from './gen/migrations.ts';

/** The database was written by a newer sepp: this one refuses to guess at its schema. */
export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

/** One migration applied while opening, for the start-up log. */
export interface AppliedMigration {
  version: number;
  name: string;
  durationMs: number;
}

export function schemaVersion(db: Database.Database): number {
  return Number(db.pragma('user_version', { simple: true }));
}

/** Applies the migrations the database lacks, oldest first; returns what it applied. */
export function migrate(
  db: Database.Database,
  available: readonly Migration[] = migrations,
): AppliedMigration[] {
  const current = schemaVersion(db);
  const latest = available.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new SchemaTooNewError(
      `the database has schema version ${current}, written by a newer sepp; this sepp ${buildInfo.version} knows schema versions up to ${latest}: run the newer sepp again, or restore a backup made before the upgrade (docs/upgrading.md)`,
    );
  }
  const applied: AppliedMigration[] = [];
  for (const migration of available) {
    if (migration.version <= current) continue;
    const startedMs = performance.now();
    const editsSchema = /\bPRAGMA\s+writable_schema\s*=\s*ON\b/i.test(migration.sql);
    if (editsSchema) db.unsafeMode(true);
    try {
      db.transaction(() => {
        db.exec(migration.sql);
        if (editsSchema) {
          const cookie = Number(db.pragma('schema_version', { simple: true }));
          db.pragma(`schema_version = ${cookie + 1}`);
          // Parses the schema again now: a broken definition throws here, inside the transaction.
          db.prepare('SELECT count(*) FROM sqlite_schema').get();
        }
        db.pragma(`user_version = ${migration.version}`);
      })();
    } finally {
      if (editsSchema) db.unsafeMode(false);
    }
    applied.push({
      version: migration.version,
      name: migration.name,
      durationMs: Math.round(performance.now() - startedMs),
    });
  }
  return applied;
}
