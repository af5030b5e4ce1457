/**
 * A bare database for benchmarks of the SQLite store's statements alone (ack-statements.ts,
 * lease-statements.ts): a temporary directory, the current schema, WAL with synchronous NORMAL
 * (no fsync, as a commit costs without its sync), and the queue `w5`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from '../../src/store/sqlite/migrate.ts';

export class StatementDb {
  readonly dir: string;
  readonly db: Database.Database;
  private nextId = 0;

  constructor(prefix: string) {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
    this.db = new Database(join(this.dir, 'sepp.db'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    migrate(this.db);
    this.db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('w5', 1)");
  }

  /** Time-ordered ids, as UUIDv7 ids are (their order keeps the id index's inserts at its end). */
  id(): string {
    return `0190${(this.nextId++).toString(16).padStart(28, '0')}`;
  }

  close(): void {
    this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * One run of a statement benchmark: `warmupSteps` + `steps` steps of both sides, the order
 * alternating from step to step and run to run (the first of a pair tends to pay more); only the
 * steps after the warm-up are counted.
 */
export function stepInterleaved(
  sides: readonly [{ step(counted: boolean): void }, { step(counted: boolean): void }],
  run: number,
  warmupSteps: number,
  steps: number,
): void {
  for (let step = 0; step < warmupSteps + steps; step++) {
    const order = (step + run) % 2 === 0 ? sides : ([sides[1], sides[0]] as const);
    for (const side of order) side.step(step >= warmupSteps);
  }
}
