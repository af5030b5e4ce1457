/**
 * A flow drawn as a graph (issue 33): a box per job, coloured by its state and titled by
 * its name in the flow (its type when no flow named it), and an arrow
 * from each job to the jobs that wait on it (solid once that dependency completed, dashed
 * while pending, red where it failed). Each box links to its job; the job the page was
 * opened from is outlined. Scrolls sideways inside its card on a narrow screen.
 */
import type { FlowLayout, PlacedNode } from '../flow-layout.ts';
import { edgePath, nodeHeight, nodeWidth } from '../flow-layout.ts';
import { shortId } from '../format.ts';
import { navigate } from '../router.tsx';

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function JobBox({ node, current }: { node: PlacedNode; current: boolean }) {
  const job = node.job!;
  const href = `/jobs/${job.id}`;
  // A job is titled by its name in the flow, which tells apart the jobs of one type (a
  // fan-out's four `transform` jobs); a job no flow named, by its type.
  const title = job.name ?? job.type;
  const sub =
    job.name !== null && job.name !== job.type
      ? `${job.type} · ${job.state}`
      : `${job.state} · ${shortId(job.id)}`;
  return (
    <a
      href={href}
      aria-label={`${title} ${job.state} job ${job.id}`}
      data-testid="flow-node"
      data-state={job.state}
      onClick={(event: MouseEvent) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        navigate(href);
      }}
    >
      <rect
        class={`flow-node flow-node-${job.state}${current ? ' flow-node-current' : ''}`}
        x={node.x}
        y={node.y}
        width={nodeWidth}
        height={nodeHeight}
        rx={6}
      />
      <text class="flow-node-type" x={node.x + 10} y={node.y + 19}>
        {clip(title, 22)}
      </text>
      <text class="flow-node-sub" x={node.x + 10} y={node.y + 36}>
        {clip(sub, 26)}
      </text>
    </a>
  );
}

function MoreBox({ node }: { node: PlacedNode }) {
  const hidden = node.hidden!;
  const states = Object.entries(hidden.states)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
  return (
    <g data-testid="flow-more">
      <title>{`${hidden.count} more jobs: ${states}`}</title>
      <rect
        class="flow-node flow-node-more"
        x={node.x}
        y={node.y}
        width={nodeWidth}
        height={nodeHeight}
        rx={6}
      />
      <text class="flow-node-type" x={node.x + 10} y={node.y + 19}>
        +{hidden.count.toLocaleString('en-US')} more
      </text>
      <text class="flow-node-sub" x={node.x + 10} y={node.y + 36}>
        {clip(states, 26)}
      </text>
    </g>
  );
}

export function FlowGraphView({ layout, currentId }: { layout: FlowLayout; currentId: string }) {
  return (
    <div class="flow-scroll">
      <svg
        class="flow-graph"
        width={layout.width}
        height={layout.height}
        viewBox={`0 0 ${layout.width} ${layout.height}`}
      >
        <title>The flow's jobs and what each waits on</title>
        <defs>
          <marker
            id="flow-arrow"
            viewBox="0 0 8 8"
            refX={8}
            refY={4}
            markerWidth={7}
            markerHeight={7}
            orient="auto"
          >
            <path d="M0,0 L8,4 L0,8 z" class="flow-arrow" />
          </marker>
        </defs>
        {layout.edges.map((edge) => (
          <path
            key={edge.key}
            d={edgePath(edge)}
            class={`flow-edge flow-edge-${edge.state}`}
            marker-end="url(#flow-arrow)"
          />
        ))}
        {layout.nodes.map((node) =>
          node.job === null ? (
            <MoreBox key={node.key} node={node} />
          ) : (
            <JobBox key={node.key} node={node} current={node.key === currentId} />
          ),
        )}
      </svg>
    </div>
  );
}
