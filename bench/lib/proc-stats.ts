import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Server-side resource use read from /proc: CPU time (user + system, including child
 * processes such as Redis's AOF-rewrite fork, live or already reaped) and resident memory.
 */

/** Kernel clock ticks per second for /proc/PID/stat times; 100 on every Linux we run on. */
const ticksPerSecond = 100;

export interface StatFields {
  /** R, S, D, Z (exited, not yet reaped by its parent)… */
  readonly state: string;
  readonly ppid: number;
  /** utime + stime, in ticks. */
  readonly ownTicks: number;
  /** cutime + cstime: children already waited for, in ticks. */
  readonly reapedChildTicks: number;
}

export function readStat(pid: number): StatFields | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const field = (n: number) => Number(rest[n - 3]);
  return {
    state: rest[0] ?? '',
    ppid: field(4),
    ownTicks: field(14) + field(15),
    reapedChildTicks: field(16) + field(17),
  };
}

/** Every live descendant of `roots` (children, grandchildren...). */
export function descendants(roots: readonly number[]): number[] {
  const childrenOf = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const stat = readStat(pid);
    if (stat === undefined) continue;
    const list = childrenOf.get(stat.ppid) ?? [];
    list.push(pid);
    childrenOf.set(stat.ppid, list);
  }
  const found: number[] = [];
  const queue = [...roots];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of childrenOf.get(pid) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Total CPU microseconds used so far by `roots` and all their descendants, live or reaped. */
export function cpuMicros(roots: readonly number[]): number {
  let ticks = 0;
  for (const pid of roots) {
    const stat = readStat(pid);
    if (stat !== undefined) ticks += stat.ownTicks + stat.reapedChildTicks;
  }
  for (const pid of descendants(roots)) ticks += readStat(pid)?.ownTicks ?? 0;
  return (ticks * 1e6) / ticksPerSecond;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return match?.[1] === undefined ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

/** Current resident memory of the server processes (not their forks, which share pages). */
export function rssBytes(roots: readonly number[]): number {
  return roots.reduce((sum, pid) => sum + statusKb(pid, 'VmRSS') * 1024, 0);
}

/** Peak resident memory since the server processes started (the kernel's high-water mark). */
export function peakRssBytes(roots: readonly number[]): number {
  return roots.reduce((sum, pid) => sum + statusKb(pid, 'VmHWM') * 1024, 0);
}

/** CPU time all processes on the machine have spent busy (not idle or waiting for I/O). */
function machineBusyMicros(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1e6) / ticksPerSecond;
}

/**
 * Measures one phase: CPU of the server and of this (client) process, and the peak server
 * RSS sampled every `sampleMs` while the phase runs.
 */
export class PhaseMeter {
  private readonly serverCpuStartUs: number;
  /** Each root's own CPU (with its descendants) at the start, to split the server's figure. */
  private readonly rootCpuStartUs: number[];
  private readonly clientCpuStart = process.cpuUsage();
  private readonly machineBusyStartUs = machineBusyMicros();
  private readonly startMs = performance.now();
  private peakRss: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly roots: readonly number[],
    sampleMs = 200,
  ) {
    this.serverCpuStartUs = cpuMicros(roots);
    this.rootCpuStartUs = roots.map((pid) => cpuMicros([pid]));
    this.peakRss = rssBytes(roots);
    this.timer = setInterval(() => {
      this.peakRss = Math.max(this.peakRss, rssBytes(this.roots));
    }, sampleMs);
    this.timer.unref();
  }

  finish(): {
    serverCpuUs: number;
    /** serverCpuUs per root process (and its descendants): e.g. sepp's, then PostgreSQL's. */
    rootCpuUs: number[];
    clientCpuUs: number;
    serverPeakRssBytes: number;
    otherCpuPercent: number;
  } {
    clearInterval(this.timer);
    const client = process.cpuUsage(this.clientCpuStart);
    const serverCpuUs = cpuMicros(this.roots) - this.serverCpuStartUs;
    const clientCpuUs = client.user + client.system;
    // What the rest of the machine (other sessions, builds) used meanwhile: this machine is
    // shared, and a figure measured next to a busy neighbour should say so.
    const capacityUs = (performance.now() - this.startMs) * 1000 * availableParallelism();
    const otherUs = machineBusyMicros() - this.machineBusyStartUs - serverCpuUs - clientCpuUs;
    return {
      serverCpuUs,
      rootCpuUs: this.roots.map((pid, i) => cpuMicros([pid]) - (this.rootCpuStartUs[i] ?? 0)),
      clientCpuUs,
      serverPeakRssBytes: Math.max(this.peakRss, rssBytes(this.roots)),
      otherCpuPercent: capacityUs > 0 ? Math.max(0, (100 * otherUs) / capacityUs) : 0,
    };
  }
}
