/**
 * A CPU profile of bench/pg-drain-profile.ts (`--profile`) summed by area (issue 37): each
 * sample's time goes to the area of the innermost frame that is not Node's own or native
 * (a `writev`, a Buffer slice or the garbage collector's time is charged to the code that
 * called it, or stays in "node / native" when nothing did). Prints self time per area, and
 * per job with `--jobs`.
 *
 *   npx tsx bench/pg-profile-areas.ts FILE.cpuprofile [--jobs N] [--top 8] [--cap-us N]
 *
 * The profile samples wall time: a sample taken while the thread waited inside a system call
 * (the socket write that wakes PostgreSQL on a loaded machine, SQLite's fdatasync) counts as
 * that call's time; those calls have an area of their own.
 *
 * `--cap-us N`: a sample counts at most N µs. On a loaded machine the process is descheduled
 * between two samples, and the whole gap (tens of ms) goes to the frame that ran when it came
 * back (bench/profile-top.ts has the same option): with V8's 1 ms interval, `--cap-us 1500`
 * leaves about the time the thread ran, so the figures approach its CPU.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { areaOf } from './lib/pg-areas.ts';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const { values, positionals } = parseArgs({
  options: { jobs: { type: 'string' }, top: { type: 'string', default: '8' }, 'cap-us': { type: 'string' } },
  allowPositionals: true,
});
const capUs = values['cap-us'] === undefined ? Number.POSITIVE_INFINITY : Number(values['cap-us']);

/**
 * System calls whose samples are mostly waiting, not CPU: the socket write that wakes
 * PostgreSQL (the thread is preempted inside it) and SQLite's fdatasync.
 */
const waits = new Set(['writev', 'fdatasync']);
const waitArea = 'system calls that wait (writev, fdatasync: wall time, mostly not CPU)';

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const self = new Map<string, number>();
  const top = new Map<string, Map<string, number>>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const us = Math.min(profile.timeDeltas[i] ?? 0, capUs);
    const leaf = byId.get(id);
    if (leaf === undefined || leaf.callFrame.functionName === '(idle)') return;
    busy += us;
    let area = waits.has(leaf.callFrame.functionName) ? waitArea : undefined;
    if (
      leaf.callFrame.functionName === 'dispatch' &&
      parentOf.get(leaf.id)?.callFrame.url === 'node:inspector'
    )
      area = 'the profiler (its start)';
    let node: ProfileNode | undefined = area === undefined ? leaf : undefined;
    while (node !== undefined && area === undefined) {
      area = areaOf(node.callFrame.url);
      if (area === undefined) node = parentOf.get(node.id);
    }
    const name =
      area ?? (leaf.callFrame.functionName === '(garbage collector)' ? 'garbage collector' : 'node / native');
    self.set(name, (self.get(name) ?? 0) + us);
    const f = leaf.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src|clients)\//, '$1/')}`;
    const inArea = top.get(name) ?? new Map<string, number>();
    inArea.set(key, (inArea.get(key) ?? 0) + us);
    top.set(name, inArea);
  });
  const jobs = values.jobs === undefined ? undefined : Number(values.jobs);
  console.log(
    `${file}: ${(busy / 1000).toFixed(0)} ms not idle${jobs ? ` = ${(busy / jobs).toFixed(1)} µs per job` : ''}`,
  );
  for (const [name, us] of [...self].sort((a, b) => b[1] - a[1])) {
    const perJob = jobs ? ` ${(us / jobs).toFixed(1).padStart(6)} µs/job` : '';
    console.log(
      `${(us / 1000).toFixed(1).padStart(8)} ms${perJob} ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${name}`,
    );
    const leaves = [...(top.get(name) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
    for (const [key, t] of leaves)
      console.log(`${''.padStart(24)}${(t / 1000).toFixed(1).padStart(7)} ms  ${key}`);
  }
}
