/**
 * A SQLite store left in the data directory of a server whose config now says
 * `store.kind = "postgres"`. That server never reads it, so the jobs still in it (ready,
 * scheduled, dead letters) would be left behind without a word after a team switches the
 * store in its config and restarts. The server logs it at start and `sepp config check`
 * prints it; neither refuses to run, since a drained file kept for its dead letters and audit
 * log is a choice (docs/postgres.md, "Moving from SQLite").
 */
import { join } from 'node:path';
import { databaseFiles, type StatMode, statMode } from './file-permissions.ts';
import type { SeppConfig } from './types.ts';
import type { ConfigWarning } from './warnings.ts';

export function sqliteLeftBehindWarnings(config: SeppConfig, stat: StatMode = statMode): ConfigWarning[] {
  if (config.store.kind !== 'postgres') return [];
  const [databaseFile] = databaseFiles;
  if (databaseFile === undefined) return [];
  const path = join(config.server.dataDir, databaseFile);
  const file = stat(path);
  if (file === undefined || file.isDirectory) return [];
  return [
    {
      key: 'store.kind',
      message:
        `is "postgres", and ${path} holds a SQLite store that this server does not read: no job in it (ready, scheduled, ` +
        'leased or dead) is moved to PostgreSQL. Drain it first on a server with store.kind = "sqlite", then move the ' +
        `file out of ${config.server.dataDir} and keep it for its dead letters and audit log (docs/postgres.md, "Moving from SQLite")`,
    },
  ];
}
