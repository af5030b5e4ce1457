import { setTimeout as sleep } from 'node:timers/promises';
import { descendants } from './proc-stats.ts';
import { spawnHelper } from './processes.ts';

/**
 * Counts the fsync-family calls a server makes while `work` runs, with
 * `strace -c -f -e trace=fsync,fdatasync -p PID` (all threads, and any process forked
 * meanwhile), attached also to the processes the server had already started (PostgreSQL's
 * backends and WAL writer, which do its fsyncs). ptrace slows the server down, so this is
 * run on a small separate job set and never around a timed phase.
 */
export interface SyncCounts {
  readonly fsync: number;
  readonly fdatasync: number;
}

const traced = ['fsync', 'fdatasync'] as const;

function parseSummary(stderr: string): SyncCounts {
  const counts = { fsync: 0, fdatasync: 0 };
  for (const line of stderr.split('\n')) {
    // "100.00    0.000253          84         3           fdatasync" (errors column may be empty)
    const cols = line.trim().split(/\s+/);
    const syscall = cols.at(-1);
    const calls = Number(cols[3]);
    for (const name of traced) if (syscall === name && Number.isFinite(calls)) counts[name] += calls;
  }
  return counts;
}

export async function countSyncs<T>(
  pids: readonly number[],
  work: () => Promise<T>,
): Promise<{ result: T; syncs: SyncCounts }> {
  const targets = [...pids, ...descendants(pids)];
  const args = ['-c', '-f', '-e', `trace=${traced.join(',')}`, ...targets.flatMap((p) => ['-p', String(p)])];
  const strace = spawnHelper('strace', args);
  let stderr = '';
  strace.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  strace.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => strace.once('exit', (code) => resolve(code)));
  // strace says "Process N attached" once per traced PID before it counts anything (or
  // "No such process" for a child that exited since it was listed).
  const deadline = Date.now() + 10_000;
  while ((stderr.match(/attached|No such process/g) ?? []).length < targets.length) {
    if (Date.now() > deadline || strace.exitCode !== null) {
      strace.kill('SIGKILL');
      throw new Error(`strace could not attach to ${pids.join(', ')}: ${stderr.trim() || 'no output'}`);
    }
    await sleep(20);
  }
  let result: T;
  try {
    result = await work();
  } finally {
    // SIGINT makes strace detach and print its summary table.
    strace.kill('SIGINT');
    await exited;
  }
  return { result, syncs: parseSummary(stderr) };
}
