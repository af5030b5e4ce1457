/**
 * What WorkerRegistry.touch costs with many unary workers (issue 29): a unary
 * Reserve (gRPC or HTTP) touches the registry on every call, so its cost per
 * touch must not grow with the workers already known. For each size N it
 * times N first touches (N distinct workers arriving) and then N repeat
 * touches (each worker calling again), in ns per touch, medians of --runs
 * runs; with --against REF the registry of that git ref is measured in the
 * same process, runs interleaved. A table, not an assertion:
 * tests/engine/worker-registry.test.ts checks the behaviour.
 *
 *   npx tsx bench/worker-registry.ts [--sizes 1000,10000,50000] [--runs 5] [--against main]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { markdownTable, median, parseArgs } from './engine-lib.ts';

interface Registry {
  touch(worker: { workerId: string; address: string; queues: readonly string[] }): void;
}
type RegistryClass = new (
  clock: { nowMs(): number },
  options: { maxWorkers: number; forgetAfterMs: number },
) => Registry;

const args = parseArgs(process.argv.slice(2));
const sizes = (args.get('sizes') ?? '1000,10000,50000').split(',').map(Number);
const runs = Number(args.get('runs') ?? 5);
const against = args.get('against');
const root = new URL('..', import.meta.url).pathname;
const registryPath = 'src/engine/operators/worker-registry.ts';

async function load(
  ref: string | undefined,
): Promise<{ label: string; Registry: RegistryClass; cleanup(): void }> {
  if (ref === undefined) {
    const mod = (await import(pathToFileURL(join(root, registryPath)).href)) as {
      WorkerRegistry: RegistryClass;
    };
    return { label: 'this tree', Registry: mod.WorkerRegistry, cleanup: () => {} };
  }
  // The file imports types only, so it runs from anywhere.
  const source = execFileSync('git', ['show', `${ref}:${registryPath}`], { cwd: root, encoding: 'utf8' });
  const commit = execFileSync('git', ['rev-parse', '--short', ref], { cwd: root, encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'sepp-worker-registry-'));
  const file = join(dir, 'worker-registry.ts');
  writeFileSync(file, source);
  const mod = (await import(pathToFileURL(file).href)) as { WorkerRegistry: RegistryClass };
  return {
    label: `${ref} (${commit})`,
    Registry: mod.WorkerRegistry,
    cleanup: () => rmSync(dir, { recursive: true }),
  };
}

/** ns per touch of N new workers, then of N repeat touches. */
function measure(Registry: RegistryClass, n: number): { firstNs: number; againNs: number } {
  let nowMs = 0;
  const registry = new Registry({ nowMs: () => nowMs }, { maxWorkers: n, forgetAfterMs: 5 * 60_000 });
  const workers = Array.from({ length: n }, (_, i) => ({
    workerId: `w-${i}`,
    address: `ipv4:10.0.${i >> 8}.${i & 255}:5000`,
    queues: ['q'],
  }));
  let started = process.hrtime.bigint();
  for (const worker of workers) {
    nowMs++;
    registry.touch(worker);
  }
  const firstNs = Number(process.hrtime.bigint() - started) / n;
  started = process.hrtime.bigint();
  for (const worker of workers) {
    nowMs++;
    registry.touch(worker);
  }
  const againNs = Number(process.hrtime.bigint() - started) / n;
  return { firstNs, againNs };
}

const trees = [await load(undefined), ...(against === undefined ? [] : [await load(against)])];
const samples = new Map<string, { first: number[]; again: number[] }>();
for (let run = 0; run < runs; run++) {
  for (const n of sizes) {
    for (const tree of trees) {
      const key = `${tree.label}\n${n}`;
      const s = samples.get(key) ?? { first: [], again: [] };
      const { firstNs, againNs } = measure(tree.Registry, n);
      s.first.push(firstNs);
      s.again.push(againNs);
      samples.set(key, s);
    }
  }
}
for (const tree of trees) tree.cleanup();

const rows: string[][] = [];
for (const n of sizes) {
  for (const tree of trees) {
    const s = samples.get(`${tree.label}\n${n}`);
    if (s === undefined) continue;
    rows.push([tree.label, n.toLocaleString('en'), median(s.first).toFixed(0), median(s.again).toFixed(0)]);
  }
}
console.log(`WorkerRegistry.touch, ns per touch, median of ${runs} interleaved runs\n`);
console.log(markdownTable(['tree', 'workers', 'first touch (ns)', 'repeat touch (ns)'], rows));
