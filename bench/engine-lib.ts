/** Small helpers shared by the engine benchmarks: the machine description, tables, arguments. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** What the numbers were measured on, as benchmark results must say. */
export function machineDescription(dataDir: string): string[] {
  const sqlite = new Database(':memory:');
  const sqliteVersion = sqlite.prepare<[], string>('SELECT sqlite_version()').pluck().get();
  sqlite.close();
  let filesystem = 'unknown';
  try {
    filesystem =
      execFileSync('df', ['-T', dataDir], { encoding: 'utf8' }).trim().split('\n').at(-1) ?? filesystem;
  } catch {
    // df is missing: say so rather than fail the benchmark.
  }
  return [
    `- CPU: ${availableParallelism()} × ${cpus()[0]?.model ?? 'unknown'} (nproc ${availableParallelism()})`,
    `- memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- kernel: Linux ${release()}`,
    `- Node ${process.version}, SQLite ${sqliteVersion} (better-sqlite3)`,
    `- data directory file system: \`${filesystem.replace(/\s+/g, ' ')}\``,
    `- load average at the end (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} — the machine is shared with other work, so absolute numbers are noisy`,
  ];
}

/** A markdown table: the first column left-aligned, the others (numbers) right-aligned. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 ? '---' : '---:'));
  return [line(header), line(align), ...rows.map(line)].join('\n');
}

/** `--name value` and `--flag` arguments. */
export function parseArgs(argv: readonly string[]): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) args.set(arg.slice(2), 'true');
    else {
      args.set(arg.slice(2), next);
      i++;
    }
  }
  return args;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Bytes this process has read through read(2)-like calls so far (Linux), cached or not. */
export function bytesReadSoFar(): number {
  try {
    const match = /^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

type EngineModule = typeof import('../src/engine/engine.ts');
type ClockModule = typeof import('../src/engine/clock.ts');
type SettingsModule = typeof import('../src/engine/settings.ts');
type StoreModule = typeof import('../src/store/sqlite/sqlite-store.ts');
export type TreeEngine = import('../src/engine/engine.ts').Engine;

/** How a tree from before the Store interface (issue 31) opened its engine: `new Engine(db, …)`. */
interface LegacyEngineModule {
  Engine: new (db: unknown, options: unknown, deps: unknown) => TreeEngine;
}
interface LegacyOpenModule {
  openDataDir(dir: string, options: { durability: 'full' | 'relaxed' }): unknown;
}

/**
 * The engine of a source tree (a checkout or `git archive` copy with node_modules
 * reachable), default options and the system clock, on a fresh temporary data directory:
 * for A/B runs of two trees in one process. A tree from before the Store interface is
 * opened its own way (its engine took the database), so older commits stay comparable.
 */
export async function openTreeEngine(
  root: string,
  durability: 'full' | 'relaxed',
): Promise<{ dir: string; engine: TreeEngine }> {
  const engineModule = await import(join(root, 'src/engine/engine.ts'));
  const { systemClock } = (await import(join(root, 'src/engine/clock.ts'))) as ClockModule;
  const { defaultEngineOptions } = (await import(join(root, 'src/engine/settings.ts'))) as SettingsModule;
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-ab-'));
  const deps = { clock: systemClock };
  if (existsSync(join(root, 'src/store/sqlite/sqlite-store.ts'))) {
    const { Engine } = engineModule as EngineModule;
    const { openSqliteStore } = (await import(join(root, 'src/store/sqlite/sqlite-store.ts'))) as StoreModule;
    const engine = await Engine.open(openSqliteStore(dir, { durability }), defaultEngineOptions(), deps);
    return { dir, engine };
  }
  const { Engine } = engineModule as LegacyEngineModule;
  const openPath = ['src/store/sqlite/open.ts', 'src/store/open.ts'].find((p) => existsSync(join(root, p)))!;
  const { openDataDir } = (await import(join(root, openPath))) as LegacyOpenModule;
  return { dir, engine: new Engine(openDataDir(dir, { durability }), defaultEngineOptions(), deps) };
}

/** An A/B's closing line: B/A of a CPU figure per unit. */
export function abLine(label: string, usA: number, usB: number, perWhat: string): string {
  return `${label}: A ${usA.toFixed(1)} µs, B ${usB.toFixed(1)} µs CPU per ${perWhat}, B/A ${(usB / usA).toFixed(3)}`;
}

/** Ends an A/B run: the load it ended at, each side's engine closed and its data directory removed. */
export function endAb(sides: readonly { dir: string; engine: { close(): void } }[]): void {
  console.log(`load average at the end: ${loadavg()[0]?.toFixed(1)}`);
  for (const side of sides) {
    side.engine.close();
    rmSync(side.dir, { recursive: true, force: true });
  }
}
