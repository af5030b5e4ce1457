import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseOptions, usage } from './args.ts';
import { ensurePeersInstalled } from './lib/peers.ts';
import { installCleanupHandlers, stopAll } from './lib/processes.ts';
import { describeMachine } from './report/machine.ts';
import { writeReport } from './report/render.ts';
import { type BenchReport, mergeRepetition, type SystemResult } from './report/results.ts';
import { runSystem } from './run-system.ts';
import { systems } from './systems/registry.ts';

/**
 * The benchmark of SPEC §10: runs the chosen workloads against each chosen system, one
 * system at a time, each start in a fresh temporary data directory on loopback, then
 * prints one markdown table per workload and writes the report, the raw JSON and two SVG
 * charts.
 */
async function main(): Promise<void> {
  let opts: ReturnType<typeof parseOptions>;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${usage}`);
    process.exit(2);
  }
  ensurePeersInstalled(opts.systems, opts.fsyncCheck);
  const runDir = mkdtempSync(join(tmpdir(), 'sepp-bench-'));
  installCleanupHandlers(async () => rmSync(runDir, { recursive: true, force: true }));
  const startedAt = new Date().toISOString();
  const machine = describeMachine(runDir);

  // Repetitions are the outer loop, so that on a shared machine a noisy minute hurts one
  // repetition of several systems rather than every repetition of one.
  const byId = new Map<string, SystemResult>();
  for (let repetition = 0; repetition < opts.repeat; repetition++) {
    for (const id of opts.systems) {
      const factory = systems.get(id);
      if (factory === undefined) continue;
      const result = await runSystem(factory(opts.settings), opts, runDir, repetition);
      byId.set(id, mergeRepetition(byId.get(id), result));
    }
  }
  const results = [...byId.values()];
  await stopAll();
  rmSync(runDir, { recursive: true, force: true });

  const report: BenchReport = {
    startedAt,
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    options: { ...opts, settings: Object.fromEntries(opts.settings) },
    machine,
    systems: results,
  };
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(`${opts.out}.json`, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${writeReport(report, opts.out)}`);
  process.stderr.write(`bench: wrote ${opts.out}.{md,json} and charts\n`);
  if (results.some((r) => r.errors.length > 0)) process.exitCode = 1;
}

await main();
