// Types for gen-migrations.mjs, so tests can import it under strict TypeScript.
export interface MigrationsTarget {
  schemaDir: string;
  label: string;
  outFile?: string;
  /** Whether each migration must carry a `-- servers-from: N` line (the PostgreSQL store's). */
  serversFrom?: boolean;
}

/** The module embedding the migrations of `target`; throws naming the file that breaks a rule. */
export function renderMigrations(target?: MigrationsTarget): string;
