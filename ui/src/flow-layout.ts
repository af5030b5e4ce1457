/**
 * Where the flow page draws each job (issue 33): a column per depth — a job stands one
 * column right of the deepest job it waits on, so every edge points right — and rows in
 * enqueue order within a column. A column shows at most `perColumn` jobs; the rest
 * become one "+N more" box that the edges to and from them meet, so a fan-out of 10,000
 * draws as 8 boxes and a count, not as 10,000 boxes. Pure: no DOM.
 */
import type { FlowGraph, JobState } from './types.ts';

export const nodeWidth = 176;
export const nodeHeight = 46;
const gapX = 56;
const gapY = 12;
const pad = 8;

export interface PlacedNode {
  /** A job id, or `more:COLUMN` for the box of a column's hidden jobs. */
  key: string;
  x: number;
  y: number;
  /** The job drawn, or null for a "+N more" box. */
  job: { id: string; queue: string; type: string; state: JobState; name: string | null } | null;
  /** For a "+N more" box: how many jobs it stands for, per state. */
  hidden: { count: number; states: Partial<Record<JobState, number>> } | null;
}

export interface PlacedEdge {
  key: string;
  from: PlacedNode;
  to: PlacedNode;
  state: 'pending' | 'completed' | 'failed';
}

export interface FlowLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export function layoutFlow(flow: FlowGraph, perColumn = 8): FlowLayout {
  const depth = new Map<string, number>();
  const waitsOn = new Map<string, string[]>();
  for (const edge of flow.edges) {
    const list = waitsOn.get(edge.jobId) ?? [];
    list.push(edge.dependsOn);
    waitsOn.set(edge.jobId, list);
  }
  // Enqueue order is a topological order: a job can only wait on jobs stored before it.
  for (const job of flow.jobs) {
    let d = 0;
    for (const dep of waitsOn.get(job.id) ?? []) d = Math.max(d, (depth.get(dep) ?? -1) + 1);
    depth.set(job.id, d);
  }
  const columns: PlacedNode[][] = [];
  const placedOf = new Map<string, PlacedNode>();
  for (const job of flow.jobs) {
    const col = depth.get(job.id) ?? 0;
    let column = columns[col];
    if (column === undefined) {
      column = [];
      columns[col] = column;
    }
    const x = pad + col * (nodeWidth + gapX);
    if (column.length < perColumn) {
      const node: PlacedNode = {
        key: job.id,
        x,
        y: pad + column.length * (nodeHeight + gapY),
        job,
        hidden: null,
      };
      column.push(node);
      placedOf.set(job.id, node);
      continue;
    }
    let more = column[perColumn];
    if (more === undefined) {
      more = {
        key: `more:${col}`,
        x,
        y: pad + perColumn * (nodeHeight + gapY),
        job: null,
        hidden: { count: 0, states: {} },
      };
      column.push(more);
    }
    const hidden = more.hidden!;
    hidden.count += 1;
    hidden.states[job.state] = (hidden.states[job.state] ?? 0) + 1;
    placedOf.set(job.id, more);
  }
  const edges = new Map<string, PlacedEdge>();
  for (const edge of flow.edges) {
    const from = placedOf.get(edge.dependsOn);
    const to = placedOf.get(edge.jobId);
    if (from === undefined || to === undefined) continue; // beyond a truncated answer
    const key = `${from.key}>${to.key}`;
    const seen = edges.get(key);
    // Edges merged into a "+N more" box show the least settled state among them.
    if (seen === undefined || rank[edge.state] < rank[seen.state])
      edges.set(key, { key, from, to, state: edge.state });
  }
  const rows = Math.max(1, ...columns.map((c) => c.length));
  return {
    nodes: columns.flat(),
    edges: [...edges.values()],
    width: pad * 2 + Math.max(1, columns.length) * (nodeWidth + gapX) - gapX,
    height: pad * 2 + rows * (nodeHeight + gapY) - gapY,
  };
}

const rank = { failed: 0, pending: 1, completed: 2 } as const;

/** The path of an edge: from the right side of the job waited on to the left side of the one that waits. */
export function edgePath(edge: PlacedEdge): string {
  const x1 = edge.from.x + nodeWidth;
  const y1 = edge.from.y + nodeHeight / 2;
  const x2 = edge.to.x;
  const y2 = edge.to.y + nodeHeight / 2;
  const bend = (x2 - x1) / 2;
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}
