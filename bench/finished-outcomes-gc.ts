/**
 * What the finished outcomes cost V8's collector (issue 37, task pgcpu20): every acked job's
 * outcome is kept for limits.finished_outcome_ms (src/engine/finished-outcomes.ts), up to 100,000,
 * so a busy server holds that many in its old generation, and every full collection marks them.
 * Each run fills a table of `--outcomes` plain completions (fresh id, queue and type strings per
 * outcome, as an ack's row gives them) in a process of its own, then times full collections
 * (`gc()`) with the table held. Runs alternate between this checkout's table and `--against`'s.
 *
 *   npx tsx bench/finished-outcomes-gc.ts [--outcomes 100000] [--runs 5] [--against /work/wt/base10]
 *
 * Prints per checkout the medians: µs per `add`, the heap the table holds (its ids included), and a full
 * collection's time with the table held and after it was let go (their difference is what the
 * outcomes add to each full collection).
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    outcomes: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '5' },
    against: { type: 'string' },
    child: { type: 'string' },
  },
});
const outcomes = Number(values.outcomes);

interface Figures {
  addUs: number;
  heldMb: number;
  fullGcMs: number;
  emptyGcMs: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function child(tree: string): Promise<Figures> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const { FinishedOutcomes } = (await import(
    pathToFileURL(join(tree, 'src/engine/finished-outcomes.ts')).href
  )) as typeof import('../src/engine/finished-outcomes.ts');
  const fullGcMs = () => {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      gc();
      times.push(performance.now() - t0);
    }
    return median(times);
  };
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const inputs = Array.from({ length: outcomes }, (_, i) => ({
    // Flat, as the request decoder gives it (randomUUID's own is a tree of concatenations).
    id: Buffer.from(randomUUID()).toString(),
    // Fresh strings each, as the driver makes them of every row.
    queue: Buffer.from('w1').toString(),
    type: Buffer.from('bench.job').toString(),
    startedAtMs: 1_700_000_000_000 + i,
  }));
  const table = new FinishedOutcomes(() => 300_000);
  const t0 = performance.now();
  for (let i = 0; i < outcomes; i++) {
    const input = inputs[i]!;
    table.add(
      {
        id: input.id,
        queue: input.queue,
        type: input.type,
        state: 'completed',
        attempt: 1,
        endedAtMs: input.startedAtMs + 5,
        result: null,
        resultContentType: null,
        lastError: null,
        deadReason: null,
        cancelledBy: null,
        startedAtMs: input.startedAtMs,
      },
      input.startedAtMs + 5,
    );
  }
  const addUs = ((performance.now() - t0) * 1000) / outcomes;
  inputs.length = 0;
  gc();
  const heldMb = (process.memoryUsage().heapUsed - heap0) / 1e6;
  const held = fullGcMs();
  if (table.size !== outcomes) throw new Error(`the table holds ${table.size}`);
  table.prune(Number.MAX_SAFE_INTEGER);
  const empty = fullGcMs();
  return { addUs, heldMb, fullGcMs: held, emptyGcMs: empty };
}

if (values.child !== undefined) {
  console.log(JSON.stringify(await child(values.child)));
} else {
  const here = new URL('..', import.meta.url).pathname;
  const trees = values.against === undefined ? [here] : [here, values.against];
  const results = new Map<string, Figures[]>(trees.map((t) => [t, []]));
  const loads: string[] = [];
  for (let r = 0; r < Number(values.runs); r++) {
    for (const tree of r % 2 === 0 ? trees : [...trees].reverse()) {
      const out = spawnSync(
        process.execPath,
        [
          '--expose-gc',
          '--import',
          'tsx',
          new URL(import.meta.url).pathname,
          '--child',
          tree,
          '--outcomes',
          `${outcomes}`,
        ],
        { encoding: 'utf8', cwd: here },
      );
      if (out.status !== 0) throw new Error(out.stderr);
      results.get(tree)?.push(JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '{}') as Figures);
      loads.push(loadavg()[0]?.toFixed(1) ?? '?');
    }
  }
  console.log(`${outcomes} outcomes held, ${values.runs} runs alternating, load ${loads.join(' ')}`);
  console.log(
    '| checkout | add µs | heap held MB | full GC ms, held | full GC ms, let go | each run: held GC ms |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | --- |');
  for (const [tree, runs] of results) {
    const m = (f: (x: Figures) => number) => median(runs.map(f)).toFixed(2);
    console.log(
      `| ${tree === here ? 'this' : tree} | ${m((x) => x.addUs)} | ${m((x) => x.heldMb)} | ${m((x) => x.fullGcMs)} | ${m((x) => x.emptyGcMs)} | ${runs.map((x) => x.fullGcMs.toFixed(1)).join(' ')} |`,
    );
  }
}
