/**
 * `sepp flow show ID`, `sepp batch show ID` and `sepp batch list` (issue 33): a job's flow —
 * every job connected to it through dependencies, with the edges — a batch's state, counts
 * and members, and the batches newest first. `sepp flow cancel ID` and `sepp batch cancel ID`
 * cancel what of them has not ended, as one act (admin key), after showing how many jobs that
 * is and asking (--yes off a terminal), as `sepp cancel --queue` does; `sepp batch seal ID`
 * seals. `--json` (or `-o json`) for scripts.
 */
import type { Argv } from 'yargs';
import { BatchState as ProtoBatchState } from '../../../clients/typescript/src/gen/sepp/v1/batch.js';
import type {
  BatchInfo,
  BatchMember,
  BatchState,
  FlowGraph,
  JobState,
  SeppClient,
  WorkflowCancelled,
} from '../../../clients/typescript/src/index.ts';
import { integerFlag } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { confirmOrRefuse } from './confirm.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { table, time } from './format.ts';
import { type Paging, pagingOf, printNextPage, withPaging } from './paging.ts';

function describeFlow(flow: FlowGraph): string {
  const waitsOn = new Map<string, string[]>();
  const nameOf = new Map<string, string>();
  for (const job of flow.jobs) if (job.name !== null) nameOf.set(job.id, job.name);
  for (const edge of flow.edges) {
    waitsOn.set(edge.jobId, [...(waitsOn.get(edge.jobId) ?? []), edge.dependsOn]);
    // A server that does not name jobs (GetFlow's name is newer): the edges' names.
    if (edge.name !== null && !nameOf.has(edge.dependsOn)) nameOf.set(edge.dependsOn, edge.name);
  }
  const label = (id: string) => nameOf.get(id) ?? id;
  const rows = flow.jobs.map((job) => [
    job.id,
    nameOf.get(job.id) ?? '-',
    job.queue,
    job.type,
    job.state,
    (waitsOn.get(job.id) ?? []).map(label).join(', ') || '-',
  ]);
  const lines = [table(['ID', 'NAME', 'QUEUE', 'TYPE', 'STATE', 'WAITS ON'], rows)];
  const counts = new Map<string, number>();
  for (const job of flow.jobs) counts.set(job.state, (counts.get(job.state) ?? 0) + 1);
  const summary = [...counts].map(([state, n]) => `${n} ${state}`).join(', ');
  const more = flow.edgesLimited
    ? ' (more not shown: the flow has more edges than one read walks, 100,000)'
    : flow.truncated
      ? ' (more not shown: --limit)'
      : '';
  lines.push(`${flow.jobs.length} jobs: ${summary}${more}`);
  return lines.join('\n');
}

function describeBatch(batch: BatchInfo, members: readonly BatchMember[]): string {
  const rows: [string, string][] = [
    ['id', batch.id],
    ['state', batch.state],
    ['created at', time(batch.createdAt)],
    ['sealed at', time(batch.sealedAt)],
    ['ended at', time(batch.endedAt)],
    [
      'members',
      `${batch.members}: ${batch.pending} pending, ${batch.completed} completed, ${batch.dead} dead, ${batch.cancelled} cancelled`,
    ],
    ['on complete', batch.hasOnComplete ? (batch.completeJobId ?? 'when it ends') : '-'],
    [
      'on success',
      batch.hasOnSuccess
        ? (batch.successJobId ?? (batch.state === 'ended' ? 'not run' : 'if all complete'))
        : '-',
    ],
    [
      'on death',
      batch.hasOnDeath
        ? (batch.deathJobId ?? (batch.firstDeadId === null ? 'when a member dies' : 'not enqueued'))
        : '-',
    ],
  ];
  if (batch.firstDeadId !== null) rows.push(['first dead', batch.firstDeadId]);
  if (batch.completionError !== null) rows.push(['completion error', batch.completionError]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  if (members.length > 0) {
    lines.push('');
    lines.push(
      table(
        ['#', 'JOB', 'ENDED AS', 'STATE NOW'],
        members.map((m) => [String(m.position), m.jobId, m.memberState, m.jobState ?? '(swept)']),
      ),
    );
    if (members.length < batch.members)
      lines.push(`${members.length} of ${batch.members} members shown (--members)`);
  }
  return lines.join('\n');
}

/** The batch states, as the protocol's enum names them (BATCH_STATE_OPEN → open). */
const batchStates = Object.keys(ProtoBatchState)
  .filter((name) => /^[A-Z]+$/.test(name) && name !== 'UNSPECIFIED' && name !== 'UNRECOGNIZED')
  .map((name) => name.toLowerCase() as BatchState);

function describeBatches(batches: readonly BatchInfo[]): string {
  if (batches.length === 0) return 'no batches';
  return table(
    ['ID', 'STATE', 'OWNER', 'CREATED AT', 'MEMBERS', 'PENDING', 'ENDED AT'],
    batches.map((b) => [
      b.id,
      b.state,
      b.owner || '-',
      time(b.createdAt),
      String(b.members),
      String(b.pending),
      time(b.endedAt),
    ]),
  );
}

/** One page (the server's default size without flags), or every page with --all. */
async function listBatches(
  client: SeppClient,
  query: { state?: BatchState; owner?: string },
  paging: Paging | null,
): Promise<{ batches: BatchInfo[]; nextPageToken: string | null }> {
  if (paging?.kind !== 'all') {
    return client.listBatches({
      ...query,
      ...(paging?.pageSize === undefined ? {} : { pageSize: paging.pageSize }),
      ...(paging === null || paging.pageToken === '' ? {} : { pageToken: paging.pageToken }),
    });
  }
  const batches: BatchInfo[] = [];
  let pageToken: string | null = null;
  do {
    const page: { batches: BatchInfo[]; nextPageToken: string | null } = await client.listBatches({
      ...query,
      pageSize: 1000,
      ...(pageToken === null ? {} : { pageToken }),
    });
    batches.push(...page.batches);
    pageToken = page.nextPageToken;
  } while (pageToken !== null);
  return { batches, nextPageToken: null };
}

const idPositional = <T>(y: Argv<T>, describe: string) =>
  y.positional('id', { type: 'string', demandOption: true, describe });

const withYes = <T>(y: Argv<T>) =>
  y.option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask (required off a terminal)' });

/** The states a cancel of a flow or a batch acts on: every one but the ends. */
const notEnded: ReadonlySet<JobState> = new Set(['waiting', 'scheduled', 'ready', 'leased']);

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** `cancelled 3 jobs of the flow of ID; 1 running, its worker was told to stop`. */
function describeCancel(result: WorkflowCancelled, what: string): string {
  const running =
    result.cancelRequested === 0
      ? ''
      : `; ${result.cancelRequested} running, ${result.cancelRequested === 1 ? 'its worker was' : 'their workers were'} told to stop`;
  return `cancelled ${plural(result.cancelled, 'job')} of ${what}${running}`;
}

export function registerWorkflowCommands(parser: Argv, io: CliIo): void {
  parser.command('flow', 'Show or cancel a flow: the jobs connected to a job through dependencies', (y) =>
    y
      .command(
        'show <id>',
        'Show the flow of a job: every job it waits on or that waits on it, with states and edges',
        (c) =>
          withConnection(
            io,
            idPositional(c, 'Any job of the flow').option('limit', {
              type: 'string',
              default: '1000',
              describe: 'Jobs to show (1-20000)',
            }),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const limit = integerFlag('limit', args.limit, { min: 1, max: 20_000 });
            const flow = await client.getFlow(args.id, { limit });
            if (wantsJson(args)) printJson(io, flow);
            else print(io, describeFlow(flow));
          }),
      )
      .command(
        'cancel <id>',
        'Cancel every job of the flow of a job that has not ended, as one act (admin key)',
        (c) =>
          withConnection(io, withYes(idPositional(c, 'Any job of the flow'))).example(
            '$0 flow cancel 0190a4c2-… --yes',
            'the whole flow of that job',
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            if (args.yes !== true) {
              const { jobs, truncated } = await client.getFlow(args.id, { limit: 20_000 });
              const open = jobs.filter((job) => notEnded.has(job.state)).length;
              await confirmOrRefuse(
                io,
                args.yes,
                `cancel the flow of ${args.id}`,
                `Cancel ${truncated ? 'at least ' : ''}${plural(open, 'job')} of the flow of ${args.id} (waiting, scheduled, ready or running)?`,
              );
            }
            const result = await client.cancelFlow(args.id);
            if (wantsJson(args)) printJson(io, { jobId: args.id, ...result });
            else print(io, describeCancel(result, `the flow of ${args.id}`));
          }),
      )
      .demandCommand(1, 'name a subcommand: show or cancel'),
  );
  parser.command(
    'batch',
    'List, show, seal or cancel batches: state, counts, completion jobs and members',
    (y) =>
      y
        .command(
          'list',
          'List batches, newest first (a key that is not admin lists its own)',
          (c) =>
            withConnection(
              io,
              withPaging(
                c
                  .option('state', { choices: batchStates, describe: 'Only batches in this state' })
                  .option('owner', {
                    type: 'string',
                    describe: "Only the batches this API key created (another key's takes the admin role)",
                  }),
              ),
            ),
          (args) =>
            runWithClient(io, args, async (client) => {
              const query = {
                ...(args.state === undefined ? {} : { state: args.state }),
                ...(args.owner === undefined ? {} : { owner: args.owner }),
              };
              const page = await listBatches(client, query, pagingOf(args));
              if (wantsJson(args)) {
                printJson(io, page);
                return;
              }
              print(io, describeBatches(page.batches));
              printNextPage(io, page.nextPageToken);
            }),
        )
        .command(
          'show <id>',
          'Show a batch: state, counts, completion jobs and its first members',
          (c) =>
            withConnection(
              io,
              idPositional(c, 'The batch id').option('members', {
                type: 'string',
                default: '100',
                describe: 'Members to list (0-1000)',
              }),
            ),
          (args) =>
            runWithClient(io, args, async (client) => {
              const membersLimit = integerFlag('members', args.members, { min: 0, max: 1000 });
              const { batch, members } = await client.getBatch(args.id, { membersLimit });
              if (wantsJson(args)) printJson(io, { ...batch, memberList: members });
              else print(io, describeBatch(batch, members));
            }),
        )
        .command(
          'cancel <id>',
          'Cancel every member of a batch that has not ended, as one act (admin key)',
          (c) =>
            withConnection(io, withYes(idPositional(c, 'The batch id'))).example(
              '$0 batch cancel 0190a4c2-… --yes',
              'a sealed batch then ends, and its on-complete job runs',
            ),
          (args) =>
            runWithClient(io, args, async (client) => {
              if (args.yes !== true) {
                const { batch } = await client.getBatch(args.id, { membersLimit: 0 });
                await confirmOrRefuse(
                  io,
                  args.yes,
                  `cancel batch ${args.id}`,
                  `Cancel the ${plural(batch.pending, 'pending member')} of batch ${args.id} (${batch.state})?`,
                );
              }
              const result = await client.cancelBatch(args.id);
              if (wantsJson(args)) printJson(io, { batchId: args.id, ...result });
              else {
                const { batch } = await client.getBatch(args.id, { membersLimit: 0 });
                const after =
                  batch.state === 'open'
                    ? `; the batch is open, and ends once sealed (sepp batch seal ${args.id})`
                    : `; the batch is ${batch.state}`;
                print(io, `${describeCancel(result, `batch ${args.id}`)}${after}`);
              }
            }),
        )
        .command(
          'seal <id>',
          'Seal a batch: no more members but from its own pending ones; it ends once none is pending',
          (c) => withConnection(io, idPositional(c, 'The batch id')),
          (args) =>
            runWithClient(io, args, async (client) => {
              const batch = await client.sealBatch(args.id);
              if (wantsJson(args)) printJson(io, batch);
              else
                print(
                  io,
                  batch.state === 'ended'
                    ? `batch ${batch.id} is ended: ${batch.completed} completed, ${batch.dead} dead, ${batch.cancelled} cancelled`
                    : `sealed batch ${batch.id}: it ends when its ${plural(batch.pending, 'pending member')} ${batch.pending === 1 ? 'has' : 'have'} ended`,
                );
            }),
        )
        .demandCommand(1, 'name a subcommand: list, show, cancel or seal'),
  );
}
