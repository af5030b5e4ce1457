/**
 * How long a CLI command takes from `node` to its exit: `sepp version` (which reads no
 * config and calls no server), from two bundles built with `node build.mjs --bundle-only
 * --out-dir DIR`, run one after the other in turns (interleaved), medians reported.
 *
 *   npx tsx bench/cli-start.ts --base /tmp/base/sepp.cjs --new dist/sepp.cjs [--runs 5] [--args version]
 *
 * Not part of `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { markdownTable, median, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const base = args.get('base');
const fresh = args.get('new');
if (base === undefined || fresh === undefined) {
  console.error('usage: npx tsx bench/cli-start.ts --base BUNDLE --new BUNDLE [--runs 5] [--args version]');
  process.exit(2);
}
const runs = Number(args.get('runs') ?? '5');
const command = (args.get('args') ?? 'version').split(' ');
const sides = [
  { label: 'base', bundle: base, ms: [] as number[] },
  { label: 'new', bundle: fresh, ms: [] as number[] },
];

/** One run of `node BUNDLE ...command`, wall time in ms; a failed run stops the benchmark. */
function once(bundle: string): number {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, [bundle, ...command], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (run.status !== 0) throw new Error(`${bundle} ${command.join(' ')} exited ${run.status}: ${run.stderr}`);
  return ms;
}

for (const side of sides) once(side.bundle); // warm the page cache
for (let i = 0; i < runs; i++) for (const side of sides) side.ms.push(once(side.bundle));

console.log(
  `node ${process.version}, \`sepp ${command.join(' ')}\`, ${runs} interleaved runs each, load ${loadavg()[0]?.toFixed(2)}`,
);
console.log(
  markdownTable(
    ['bundle', 'median ms', 'min ms', 'max ms'],
    sides.map((s) => [
      `${s.label} (${s.bundle})`,
      median(s.ms).toFixed(1),
      Math.min(...s.ms).toFixed(1),
      Math.max(...s.ms).toFixed(1),
    ]),
  ),
);
