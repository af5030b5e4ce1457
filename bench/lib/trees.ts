/**
 * Another checkout's server for a benchmark's baseline (`--against`): a checkout's
 * directory, or a git ref exported to a temporary directory that uses this checkout's
 * node_modules. The client is always this checkout's SDK, so only the server differs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface SourceTree {
  label: string;
  /** The tree's src/ (BenchServer.start's srcDir); undefined: this checkout's. */
  srcDir: string | undefined;
  cleanup?: () => void;
}

const repoRoot = new URL('../..', import.meta.url).pathname;

export function git(...gitArgs: string[]): string {
  return execFileSync('git', ['-C', repoRoot, ...gitArgs], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

/** A checkout's directory, or a git ref exported to a temporary directory with this checkout's node_modules. */
export function sourceTree(against: string): SourceTree {
  if (existsSync(join(against, 'src/app.ts'))) {
    return { label: against, srcDir: join(resolve(against), 'src') };
  }
  const commit = git('rev-parse', '--short', against);
  const dir = mkdtempSync(join(tmpdir(), `sepp-tree-${commit}-`));
  execFileSync('sh', ['-c', `git -C "${repoRoot}" archive "${commit}" | tar -x -C "${dir}"`]);
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  return {
    label: `${against} (${commit})`,
    srcDir: join(dir, 'src'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
