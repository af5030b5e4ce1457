/**
 * A sampling heap profile of the sepp server's drain (bench/pg-chain.ts `--heap-profile`, freed
 * objects included) summed by area, as bench/pg-profile-areas.ts sums a CPU profile: each sampled
 * allocation goes to the area of the innermost frame that is not Node's own or native (a Buffer
 * or a string made by Node for the driver is the driver's). Prints bytes allocated per job per
 * area, with its largest allocating functions, and the largest stacks of sepp's own code.
 *
 *   npx tsx bench/pg-heap-areas.ts FILE.heapprofile --jobs 20000 [--top 8]
 *
 * The profile samples one allocation per 4 KiB on average (bench/lib/pg-chain-trace.ts): a
 * figure of a few hundred bytes per job over 20,000 jobs rests on a few thousand samples.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { areaOf } from './lib/pg-areas.ts';

interface HeapNode {
  id: number;
  selfSize: number;
  children: HeapNode[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const { values, positionals } = parseArgs({
  options: { jobs: { type: 'string', default: '20000' }, top: { type: 'string', default: '8' } },
  allowPositionals: true,
});
const jobs = Number(values.jobs);
const top = Number(values.top);

const frameName = (f: HeapNode['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src|clients)\//, '$1/')}:${f.lineNumber + 1}`;

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, Map<string, number>>();
  /** Bytes by the innermost frame of sepp's own code (src/) on the stack, whatever allocated. */
  const bySeppFrame = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode, stack: HeapNode[]) => {
    const path = [...stack, node];
    if (node.selfSize > 0) {
      total += node.selfSize;
      let area: string | undefined;
      let at: HeapNode | undefined;
      for (let i = path.length - 1; i >= 0 && area === undefined; i--) {
        at = path[i];
        area = at === undefined ? undefined : areaOf(at.callFrame.url);
      }
      const name = area ?? 'node / native (no script frame)';
      byArea.set(name, (byArea.get(name) ?? 0) + node.selfSize);
      const fns = byFunction.get(name) ?? new Map<string, number>();
      const key = `${frameName(node.callFrame)}${at !== undefined && at !== node ? ` ← ${frameName(at.callFrame)}` : ''}`;
      fns.set(key, (fns.get(key) ?? 0) + node.selfSize);
      byFunction.set(name, fns);
      const sepp = [...path].reverse().find((n) => /\/src\//.test(n.callFrame.url));
      if (sepp !== undefined) {
        const k = frameName(sepp.callFrame);
        bySeppFrame.set(k, (bySeppFrame.get(k) ?? 0) + node.selfSize);
      }
    }
    for (const child of node.children) walk(child, path);
  };
  walk(profile.head, []);
  const perJob = (bytes: number) => `${(bytes / jobs).toFixed(0).padStart(6)} B/job`;
  console.log(`${file}: ${(total / 2 ** 20).toFixed(1)} MiB sampled = ${perJob(total)}`);
  for (const [name, bytes] of [...byArea].sort((a, b) => b[1] - a[1])) {
    console.log(`${perJob(bytes)} ${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${name}`);
    const fns = [...(byFunction.get(name) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, top);
    for (const [key, b] of fns) console.log(`${''.padStart(16)}${perJob(b)}  ${key}`);
  }
  console.log("innermost frame of sepp's own code (src/) above each allocation:");
  for (const [key, b] of [...bySeppFrame].sort((a, b) => b[1] - a[1]).slice(0, 3 * top))
    console.log(`${perJob(b)}  ${key}`);
}
