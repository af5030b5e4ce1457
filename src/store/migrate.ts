/**
 * Applies the embedded migrations (schema/NNNN_*.sql, generated into
 * gen/migrations.ts) in order, tracked by PRAGMA user_version, each in its own
 * transaction. A database newer than this binary is refused rather than guessed at.
 */
import type Database from 'better-sqlite3';
import { type Migration, migrations } from './gen/migrations.ts';

export function schemaVersion(db: Database.Database): number {
  return Number(db.pragma('user_version', { simple: true }));
}

export function migrate(db: Database.Database, available: readonly Migration[] = migrations): number {
  const current = schemaVersion(db);
  const latest = available.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new Error(
      `the database has schema version ${current} but this sepp knows only up to ${latest}: run a newer sepp, or restore a backup made by this version`,
    );
  }
  for (const migration of available) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    })();
  }
  return schemaVersion(db);
}
