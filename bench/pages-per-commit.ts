/**
 * Which pages each hot-path commit writes, and which b-tree each belongs to.
 *
 * Opens a real data directory through the store (migrations included), drives the real
 * engine through the hot-path operations one commit at a time, reads the WAL frames each
 * commit appended (their page numbers, from the frame headers) and maps every page to its
 * table or index with SQLite's `dbstat` virtual table (compiled into better-sqlite3).
 * Checkpoints are left to nobody (`wal_checkpoints = external`), so the WAL only grows and
 * every commit's frames are where the previous commit's ended.
 *
 *   npx tsx bench/pages-per-commit.ts [--backlog 5000] [--repeat 20] [--out FILE.md] [--experiment SQL]
 *                                   [--payload-bytes 256] [--types 1]
 *
 * The queue starts with --backlog ready jobs of 256 bytes (the W1 shape), so the b-trees
 * have their realistic depth; each operation then runs --repeat times, one commit each.
 * --types N gives the jobs N types in turn (`bench-0`, `bench-1`, …; 1: all `bench`), so the
 * admin's index holds each state's entries as N ranges, as a queue with several job types does.
 * The cells are pages written per commit (means over the repeats). The engine runs on a
 * fake clock: no maintenance commits in between. --experiment runs SQL on the database
 * once the engine is open (say `DROP INDEX jobs_by_state_type`), to see what a layout
 * change would save before writing its migration.
 */
import { closeSync, fstatSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions } from '../src/engine/settings.ts';
import type { EnqueueRequest, LeasedJob } from '../src/engine/types.ts';
import { type Db, databaseFileName } from '../src/store/sqlite/open.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { machineDescription, markdownTable, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const backlog = Number(args.get('backlog') ?? 5000);
const repeat = Number(args.get('repeat') ?? 20);
const outPath = args.get('out');
const experiment = args.get('experiment');

const queue = 'w1';
const payloadBytes = Number(args.get('payload-bytes') ?? 256);
const payload = Buffer.alloc(payloadBytes, 'x');
const types = Number(args.get('types') ?? 1);
let enqueued = 0;
const job = (): EnqueueRequest => ({
  queue,
  type: types === 1 ? 'bench' : `bench-${enqueued++ % types}`,
  payload,
});

/** Reads the frames SQLite appends to a WAL file, grouped by commit. */
class WalFrames {
  private readonly fd: number;
  private offset = 32; // the WAL header
  private readonly pageBytes: number;

  constructor(path: string) {
    this.fd = openSync(path, 'r');
    const header = Buffer.alloc(32);
    readSync(this.fd, header, 0, 32, 0);
    this.pageBytes = header.readUInt32BE(8);
    this.offset = fstatSync(this.fd).size;
  }

  /** The page numbers of each commit appended since the last call. */
  newCommits(): number[][] {
    const size = fstatSync(this.fd).size;
    const frameBytes = 24 + this.pageBytes;
    const header = Buffer.alloc(24);
    const commits: number[][] = [];
    let pages: number[] = [];
    for (; this.offset + frameBytes <= size; this.offset += frameBytes) {
      readSync(this.fd, header, 0, 24, this.offset);
      pages.push(header.readUInt32BE(0));
      // A commit's last frame records the database's size in pages; the others hold 0.
      if (header.readUInt32BE(4) !== 0) {
        commits.push(pages);
        pages = [];
      }
    }
    if (pages.length > 0) throw new Error('the WAL ends inside a transaction');
    return commits;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** What each page of the database is now: `btree (leaf|internal|overflow)`, or the header page, or free. */
function pageOwners(db: Db): Map<number, string> {
  const owners = new Map<number, string>();
  const rows = db
    .prepare<[], { name: string; pageno: number; pagetype: string }>(
      'SELECT name, pageno, pagetype FROM dbstat',
    )
    .all();
  for (const { name, pageno, pagetype } of rows) {
    owners.set(pageno, pageno === 1 ? 'page 1 (file header, free-list head)' : `${name} (${pagetype})`);
  }
  return owners;
}

interface Measured {
  operation: string;
  commits: number;
  /** Pages per commit, summed over the commits, by owner. */
  pagesByOwner: Map<string, number>;
  frames: number[];
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-pages-'));
  const store = openSqliteStore(dataDir, { durability: 'full', walCheckpoints: 'external' });
  const { db } = store;
  const clock = new FakeClock();
  const engine = await Engine.open(store, defaultEngineOptions(), { clock, random: () => 0.5 });
  // After the engine prepared its statements: the hot path's re-prepare themselves, the others are not used here.
  if (experiment !== undefined) db.exec(experiment);
  const results: Measured[] = [];
  let wal: WalFrames | undefined;
  try {
    for (let done = 0; done < backlog; done += 500) {
      await engine.enqueueBatch(Array.from({ length: Math.min(500, backlog - done) }, job));
    }
    wal = new WalFrames(join(dataDir, `${databaseFileName}-wal`));
    const frames = wal;

    /** Runs `op` --repeat times, one commit each, and attributes every page written. */
    const measure = async (operation: string, op: (i: number) => Promise<unknown>): Promise<void> => {
      const measured: Measured = { operation, commits: 0, pagesByOwner: new Map(), frames: [] };
      frames.newCommits(); // what the set-up committed
      for (let i = 0; i < repeat; i++) {
        await op(i);
        const commits = frames.newCommits();
        const owners = pageOwners(db);
        for (const pages of commits) {
          measured.commits++;
          measured.frames.push(pages.length);
          for (const page of pages) {
            const owner = owners.get(page) ?? 'free list (trunk)';
            measured.pagesByOwner.set(owner, (measured.pagesByOwner.get(owner) ?? 0) + 1);
          }
        }
      }
      results.push(measured);
    };
    const lease = (maxJobs: number) => engine.reserve({ queues: [queue], maxJobs, workerId: 'bench' });
    const ackAll = (jobs: readonly LeasedJob[]) =>
      engine.ackBatch(jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })));

    await measure('enqueue 1', () => engine.enqueue(job()));
    await measure('enqueue batch of 50', () => engine.enqueueBatch(Array.from({ length: 50 }, job)));
    const leased: LeasedJob[] = [];
    await measure('lease 1', async () => leased.push(...(await lease(1))));
    await measure('ack 1', (i) => engine.ack({ jobId: leased[i]!.id, attempt: leased[i]!.attempt }));
    leased.length = 0;
    for (let i = 0; i < repeat; i++) leased.push(...(await lease(1)));
    await measure('nack 1 (backoff: to scheduled)', (i) =>
      engine.nack({ jobId: leased[i]!.id, attempt: leased[i]!.attempt, error: 'bench' }),
    );
    // The W1 drain's commit: one reserve of 50 and one AckBatch of the previous 50, in one batch.
    let previous = await lease(50);
    await measure('lease 50 + ack 50 (one commit)', async () => {
      const [next] = await Promise.all([lease(50), ackAll(previous)]);
      previous = next;
    });
  } finally {
    wal?.close();
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  report(results);
}

function report(results: readonly Measured[]): void {
  const owners = [...new Set(results.flatMap((r) => [...r.pagesByOwner.keys()]))].sort();
  const perCommit = (r: Measured, n: number) =>
    r.commits === 0 ? '' : n === 0 ? '·' : (n / r.commits).toFixed(2);
  const rows = owners.map((owner) => [
    owner,
    ...results.map((r) => perCommit(r, r.pagesByOwner.get(owner) ?? 0)),
  ]);
  const total = (r: Measured) => r.frames.reduce((a, b) => a + b, 0);
  rows.push(['**WAL frames per commit**', ...results.map((r) => `**${perCommit(r, total(r))}**`)]);
  rows.push(['commits measured', ...results.map((r) => String(r.commits))]);
  const table = markdownTable(['b-tree (page type)', ...results.map((r) => r.operation)], rows);
  const text = [
    `# Pages written per commit, by b-tree`,
    '',
    `\`npx tsx bench/pages-per-commit.ts --backlog ${backlog} --repeat ${repeat}${payloadBytes === 256 ? '' : ` --payload-bytes ${payloadBytes}`}${types === 1 ? '' : ` --types ${types}`}${experiment === undefined ? '' : ` --experiment '${experiment}'`}\` — ${new Date().toISOString()}`,
    '',
    `A queue holding ${backlog} ready jobs of ${payloadBytes} bytes${types === 1 ? '' : ` (${types} types in turn)`}; each operation ran ${repeat} times, one commit each`,
    "(the last column: one reserve of 50 and one AckBatch of 50 in one batch, the W1 drain's commit).",
    'Cells: pages written per commit (mean); `·`: never. Page types from `dbstat`.',
    '',
    table,
    '',
    ...machineDescription(tmpdir()),
    '',
  ].join('\n');
  process.stdout.write(text);
  if (outPath !== undefined) writeFileSync(outPath, text);
}

await main();
