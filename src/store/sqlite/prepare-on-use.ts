/**
 * Statements prepared on their first use, once per connection. A store's capability
 * modules name ~130 statements; a server uses a few dozen of them in a day and each
 * prepare() costs SQLite a parse and a plan (the multi-row inserts the most), so
 * preparing them all at open was most of what opening a store cost: ~8 ms of CPU an
 * open, which the model test paid once per run and `sepp serve` once per start.
 *
 * A statement's SQL is still checked: tests/admin/query-plans.test.ts prepares every
 * statement of every module on a migrated database (and reads its plan).
 */
import type Database from 'better-sqlite3';
import type { Db } from './open.ts';

/** What a capability module needs of a connection: a way to prepare its statements. */
export type Preparer = Pick<Db, 'prepare'>;

type Mode = 'pluck' | 'raw' | 'expand' | 'safeIntegers';

/**
 * A statement that prepares itself at its first run, get, all or iterate, with the modes
 * (pluck, raw…) asked for before; from then on those calls go straight to the prepared one.
 */
class StatementOnUse {
  private prepared: Database.Statement | undefined;
  private readonly modes: [Mode, boolean][] = [];

  constructor(
    private readonly db: Db,
    readonly source: string,
  ) {}

  run(...params: unknown[]): Database.RunResult {
    return this.statement().run(...params);
  }
  get(...params: unknown[]): unknown {
    return this.statement().get(...params);
  }
  all(...params: unknown[]): unknown[] {
    return this.statement().all(...params);
  }
  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.statement().iterate(...params);
  }
  columns(): Database.ColumnDefinition[] {
    return this.statement().columns();
  }
  get reader(): boolean {
    return this.statement().reader;
  }
  get readonly(): boolean {
    return this.statement().readonly;
  }
  pluck(on = true): this {
    return this.mode('pluck', on);
  }
  raw(on = true): this {
    return this.mode('raw', on);
  }
  expand(on = true): this {
    return this.mode('expand', on);
  }
  safeIntegers(on = true): this {
    return this.mode('safeIntegers', on);
  }

  private mode(mode: Mode, on: boolean): this {
    if (this.prepared === undefined) this.modes.push([mode, on]);
    else this.prepared[mode](on);
    return this;
  }

  private statement(): Database.Statement {
    if (this.prepared !== undefined) return this.prepared;
    const statement = this.db.prepare(this.source);
    for (const [mode, on] of this.modes) statement[mode](on);
    this.prepared = statement;
    // The calls go to the prepared statement itself from now on (it changes in place on pluck, raw…).
    this.run = statement.run.bind(statement);
    this.get = statement.get.bind(statement);
    this.all = statement.all.bind(statement);
    this.iterate = statement.iterate.bind(statement);
    return statement;
  }
}

/** A preparer over `db` whose statements are prepared on their first use. */
export function prepareOnUse(db: Db): Preparer {
  return {
    // Every member of a Statement that the store's modules use is there (the class above).
    prepare: ((source: string) => new StatementOnUse(db, source)) as unknown as Db['prepare'],
  };
}
