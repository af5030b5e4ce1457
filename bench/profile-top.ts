/**
 * The top entries of a V8 CPU profile (`.cpuprofile`, from `node --cpu-prof` or the
 * benchmarks' --profile): self time per function, and the share of the profile.
 *
 *   npx tsx bench/profile-top.ts FILE.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' } },
  allowPositionals: true,
});
for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) return;
    const where =
      frame.url === ''
        ? ''
        : ` ${frame.url.replace(/^.*\/(node_modules|src|clients)\//, '$1/')}:${frame.lineNumber + 1}`;
    // A native call (better-sqlite3's run/get/all) says little alone: name its JavaScript caller.
    const caller = frame.url === '' && frame.functionName !== '' ? parentOf.get(id)?.callFrame : undefined;
    const via =
      caller === undefined || caller.functionName === '(root)'
        ? ''
        : ` ← ${caller.functionName || '(anonymous)'}`;
    const key = `${frame.functionName || '(anonymous)'}${where}${via}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
    totalUs += delta;
  });
  const busyUs = totalUs - (selfUs.get('(idle)') ?? 0);
  console.log(
    `${file}: ${(totalUs / 1000).toFixed(0)} ms sampled, ${(busyUs / 1000).toFixed(0)} ms not idle`,
  );
  for (const [key, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    const share = key === '(idle)' ? '' : ` (${((us / busyUs) * 100).toFixed(1)} % of busy)`;
    console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${key}${share}`);
  }
}
