/**
 * What the SDK package costs an application: its installed size and how long loading it
 * takes. Packs clients/typescript with `npm pack`, installs the tarball into a fresh
 * project outside the repository (offline, as tests/helpers/sdk-package.ts does), then
 * times `node` loading nothing, `require('@sepp-queue/client')` and
 * `import('@sepp-queue/client')` (and `require('@grpc/grpc-js')` alone, the largest part),
 * interleaved, and prints medians. Load time is the
 * difference to an empty run of the same kind (CommonJS or ES module): what a process
 * pays for the SDK at start-up.
 *
 *   npx tsx bench/sdk-package.ts [--runs 11]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  installedPackages,
  mib,
  sdkDir,
  sdkPackage,
  sdkTarballName,
  seedLockfile,
  treeBytes,
} from '../tests/helpers/sdk-package.ts';
import { run, userEnv } from '../tests/helpers/user-commands.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '11' } } });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a positive integer');

const work = mkdtempSync(join(tmpdir(), 'sepp-sdk-bench-'));
try {
  const env = userEnv();
  const step = async (what: string, command: string, args: string[], cwd: string) => {
    const result = await run(command, args, cwd, env);
    if (result.code !== 0) throw new Error(`${what} failed:\n${result.stdout}${result.stderr}`);
  };
  await step('npm init', 'npm', ['init', '-y'], work);
  await step('npm pack', 'npm', ['pack', sdkDir], work);
  seedLockfile(work);
  await step('npm install', 'npm', ['install', `./${sdkTarballName}`], work);

  const scripts = {
    'node (nothing)': ['-e', ''],
    'node ESM (nothing)': ['--input-type=module', '-e', ''],
    '@grpc/grpc-js': ['-e', "require('@grpc/grpc-js')"],
    require: ['-e', "require('@sepp-queue/client')"],
    import: ['--input-type=module', '-e', "await import('@sepp-queue/client')"],
  } as const;
  const samples: Record<keyof typeof scripts, number[]> = {
    'node (nothing)': [],
    'node ESM (nothing)': [],
    '@grpc/grpc-js': [],
    require: [],
    import: [],
  };
  for (let i = 0; i < runs; i++) {
    for (const [name, args] of Object.entries(scripts) as Array<[keyof typeof scripts, readonly string[]]>) {
      const started = process.hrtime.bigint();
      const result = spawnSync(process.execPath, args, { cwd: work, env, encoding: 'utf8' });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (result.status !== 0) throw new Error(`${name}: ${result.stderr}`);
      samples[name].push(ms);
    }
  }
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const base = median(samples['node (nothing)']);
  const esmBase = median(samples['node ESM (nothing)']);
  const packages = installedPackages(work);
  console.log(
    `${sdkPackage.name} ${sdkPackage.version}, node ${process.version}, load average ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log(`tarball ${mib(treeBytes(join(work, sdkTarballName)))}`);
  console.log(
    `installed: the package ${mib(treeBytes(join(work, 'node_modules', sdkPackage.name)))}, ` +
      `node_modules ${mib(treeBytes(join(work, 'node_modules')))} in ${packages.length} packages`,
  );
  console.log(`process start + load, medians of ${runs} interleaved runs:`);
  for (const name of Object.keys(scripts) as Array<keyof typeof scripts>) {
    const m = median(samples[name]);
    const from = name === 'import' ? esmBase : base;
    const extra = name.startsWith('node ') ? '' : `  (+${(m - from).toFixed(0)} ms)`;
    console.log(`  ${name.padEnd(18)} ${m.toFixed(0).padStart(5)} ms${extra}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
