/**
 * Checks the executable against the unit's SystemCallFilter without systemd: strace
 * records the system calls a run makes, `systemd-analyze syscall-filter` expands the
 * filter's groups, and every recorded call must be in the result. systemd cannot be run
 * in CI containers, so this is how a too-tight filter is found before production.
 */
import { type SpawnSyncOptions, spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `name` is an executable on PATH. */
export function commandExists(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return dir !== '';
    } catch {
      return false;
    }
  });
}

/**
 * The set of calls a list of SystemCallFilter= values allows, in systemd's semantics
 * when the first value is an allow list: later values add, `~` values remove.
 */
export function allowedSyscalls(filterValues: readonly string[]): Set<string> {
  const allowed = new Set<string>();
  for (const value of filterValues) {
    const remove = value.startsWith('~');
    for (const item of value.replace(/^~/, '').split(/\s+/).filter(Boolean)) {
      for (const call of expand(item, new Set())) remove ? allowed.delete(call) : allowed.add(call);
    }
  }
  return allowed;
}

function expand(item: string, seen: Set<string>): string[] {
  if (!item.startsWith('@')) return [item];
  if (seen.has(item)) return [];
  seen.add(item);
  const out = spawnSync('systemd-analyze', ['syscall-filter', item], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`systemd-analyze syscall-filter ${item}: ${out.stderr}`);
  // The first line names the group, `#` lines describe it, the rest are calls or groups.
  return out.stdout
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .flatMap((l) => expand(l, seen));
}

/**
 * The system calls `exe args` makes, every thread included (strace -f -c). As root it
 * runs as `nobody`, like the unit's unprivileged user: some libraries call more as root
 * (SQLite chowns its journal to the database's owner).
 */
export function tracedSyscalls(
  exe: string,
  args: readonly string[],
  options: SpawnSyncOptions & { traceFile: string },
): { status: number | null; output: string; syscalls: Set<string> } {
  const asUser = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const run = spawnSync('strace', ['-f', '-c', '-o', options.traceFile, ...asUser, exe, ...args], {
    ...options,
    encoding: 'utf8',
  });
  const syscalls = new Set<string>();
  // Summary rows end in the call name: "% time seconds usecs/call calls [errors] syscall".
  for (const line of readFileSync(options.traceFile, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+(?:\d+\s+)?([a-z0-9_]+)$/.exec(line);
    if (m?.[1] !== undefined && m[1] !== 'total') syscalls.add(m[1]);
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}`, syscalls };
}
