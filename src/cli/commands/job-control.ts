/**
 * `sepp cancel` and `sepp update`: stop jobs, or change waiting ones — one or
 * more by id, or every job of a queue that --queue, --type, --state and --group match
 * (which counts first — --dry-run only counts — and asks, showing the count, or
 * needs --yes off a terminal; with --background it prints the bulk operation as
 * soon as it has begun).
 */
import type { Argv } from 'yargs';
import type { JobChanges, JobFilter, JobState, SeppClient } from '../../../clients/typescript/src/index.ts';
import { UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { printStarted } from './bulk.ts';
import { confirmOrRefuse } from './confirm.ts';
import {
  type ConnectionArgs,
  print,
  printJson,
  runWithClient,
  wantsJson,
  withConnection,
} from './connection.ts';
import { durationFlag, oneOf, timeFlag } from './flag-values.ts';
import { requestKeyOf, requestKeyOption } from './request-key.ts';

const cancellable: readonly JobState[] = ['scheduled', 'ready', 'leased'];
const updatable: readonly JobState[] = ['scheduled', 'ready'];

interface SelectionArgs extends ConnectionArgs {
  ids?: string[] | undefined;
  queue?: string | undefined;
  type?: string | undefined;
  state?: string[] | undefined;
  group?: string | undefined;
  yes?: boolean | undefined;
  'dry-run'?: boolean | undefined;
  background?: boolean | undefined;
  'request-key'?: string | undefined;
}

function withSelection<T>(y: Argv<T>, states: readonly JobState[]) {
  return y
    .positional('ids', { type: 'string', array: true, describe: 'Job ids' })
    .option('queue', { type: 'string', describe: 'Every matching job of this queue instead of ids' })
    .option('type', { type: 'string', describe: 'With --queue: only jobs of this type' })
    .option('group', { type: 'string', describe: 'With --queue: only jobs of this group' })
    .option('state', {
      type: 'string',
      array: true,
      choices: states,
      describe: `With --queue: only jobs in these states (default: ${states.join(', ')})`,
    })
    .option('dry-run', { type: 'boolean', describe: 'With --queue: only count the jobs it would change' })
    .option('background', {
      type: 'boolean',
      describe: 'With --queue: start it and print its id; do not wait',
    })
    .option('request-key', { ...requestKeyOption, describe: `With --queue: ${requestKeyOption.describe}` })
    .option('yes', {
      alias: 'y',
      type: 'boolean',
      describe: 'With --queue: do not ask (required off a terminal)',
    });
}

/** The call's `requestKey` option (none without --request-key). */
type Keyed = ReturnType<typeof requestKeyOf>;

/** The ids, or the filter (with its request key); never both, never neither. */
function selectionOf(args: SelectionArgs): { ids: string[] } | { filter: JobFilter; keyed: Keyed } {
  const ids = args.ids ?? [];
  if (args.queue === undefined) {
    if (
      args.type !== undefined ||
      args.state !== undefined ||
      args.group !== undefined ||
      args['dry-run'] === true
    ) {
      throw new UsageError('--type, --state, --group and --dry-run go with --queue');
    }
    if (ids.length === 0)
      throw new UsageError('name the jobs by id, or give --queue (with --type, --state, --group)');
    if (args.background === true)
      throw new UsageError('--background goes with --queue: chosen ids change at once');
    if (args['request-key'] !== undefined)
      throw new UsageError(
        '--request-key goes with --queue: chosen ids change at once, no operation to name',
      );
    return { ids };
  }
  if (ids.length > 0) throw new UsageError('give job ids or --queue, not both');
  return {
    filter: {
      queue: args.queue,
      ...(args.type === undefined ? {} : { type: args.type }),
      ...(args.state === undefined ? {} : { states: args.state as JobState[] }),
      ...(args.group === undefined ? {} : { group: args.group }),
    },
    keyed: requestKeyOf(args),
  };
}

/** `3 jobs of type digest in queue bulk (scheduled, ready or leased)`. */
function describeFilter(count: number, filter: JobFilter, states: readonly JobState[]): string {
  const type = filter.type === undefined ? '' : ` of type ${filter.type}`;
  const group = filter.group === undefined ? '' : ` in group ${filter.group}`;
  const named = filter.states ?? states;
  const which = named.length === 1 ? named.join('') : `${named.slice(0, -1).join(', ')} or ${named.at(-1)}`;
  return `${count} ${count === 1 ? 'job' : 'jobs'}${type}${group} in queue ${filter.queue} (${which})`;
}

/** What a bulk cancel or update of --queue does, in the words the command prints. */
interface BulkChange {
  action: 'cancel' | 'update';
  changes: JobChanges;
  /** The states it changes, named when the filter names none. */
  states: readonly JobState[];
  /** `cancel`, `change`: what the refusal and the question say. */
  verb: string;
  /** `cancelled`, `changed`: what a dry run says. */
  done: string;
}

/**
 * What a bulk cancel or update does before it runs: its dry run's count (all
 * that --dry-run prints), the question that shows it, and with --background
 * the operation started and printed. True when the caller runs it and waits.
 */
async function countedAndConfirmed(
  io: CliIo,
  client: SeppClient,
  args: SelectionArgs,
  filter: JobFilter,
  change: BulkChange,
  keyed: Keyed,
): Promise<boolean> {
  const { matched } =
    change.action === 'cancel'
      ? await client.jobs.cancelMatching(filter, { dryRun: true })
      : await client.jobs.updateMatching(filter, change.changes, { dryRun: true });
  const described = describeFilter(matched, filter, change.states);
  if (args['dry-run'] === true) {
    if (wantsJson(args)) printJson(io, { ...filter, matched });
    else print(io, `${described} would be ${change.done}`);
    return false;
  }
  const question = `${change.verb.charAt(0).toUpperCase()}${change.verb.slice(1)} ${described}?`;
  await confirmOrRefuse(io, args.yes, `${change.verb} every matching job of ${filter.queue}`, question);
  if (args.background === true) {
    printStarted(io, args, await client.jobs.startBulk(change.action, filter, change.changes, keyed));
    return false;
  }
  return true;
}

async function cancelMatching(
  io: CliIo,
  client: SeppClient,
  args: SelectionArgs,
  filter: JobFilter,
  keyed: Keyed,
): Promise<void> {
  const change = {
    action: 'cancel',
    changes: {},
    states: cancellable,
    verb: 'cancel',
    done: 'cancelled',
  } as const;
  if (!(await countedAndConfirmed(io, client, args, filter, change, keyed))) return;
  const result = await client.cancelJobs(filter, keyed);
  if (wantsJson(args)) printJson(io, { ...filter, ...result });
  else {
    const running =
      result.cancelRequested === 0
        ? ''
        : `; ${result.cancelRequested} running, their workers were told to stop`;
    print(io, `cancelled ${describeFilter(result.cancelled, filter, cancellable)}${running}`);
  }
}

function changesOf(args: {
  priority?: number | undefined;
  'run-now'?: boolean | undefined;
  'run-at'?: string | undefined;
  delay?: string | undefined;
  'new-group'?: string | undefined;
}): JobChanges {
  const changes: JobChanges = {};
  if (args.priority !== undefined) changes.priority = args.priority;
  oneOf({ 'run-now': args['run-now'], 'run-at': args['run-at'], delay: args.delay });
  if (args['run-now'] === true) changes.runNow = true;
  if (args['run-at'] !== undefined) changes.runAt = timeFlag('run-at', args['run-at']);
  if (args.delay !== undefined) changes.delayMs = durationFlag('delay', args.delay);
  if (args['new-group'] !== undefined) changes.group = args['new-group'] === '' ? null : args['new-group'];
  if (Object.keys(changes).length === 0)
    throw new UsageError('give --priority, --run-now, --run-at, --delay or --new-group');
  return changes;
}

async function updateMatching(
  io: CliIo,
  client: SeppClient,
  args: SelectionArgs,
  filter: JobFilter,
  changes: JobChanges,
  keyed: Keyed,
): Promise<void> {
  // Refused here, before any call, in the flags' names (the server's refusal names its fields).
  const oneAtATime = [
    changes.runAt !== undefined ? '--run-at' : '',
    changes.delayMs !== undefined ? '--delay' : '',
    changes.group !== undefined ? '--new-group' : '',
  ].filter((flag) => flag !== '');
  if (oneAtATime.length > 0) {
    throw new UsageError(
      `${oneAtATime.join(' and ')} ${oneAtATime.length === 1 ? 'changes' : 'change'} one job at a time: name the jobs by id (with --queue: --run-now or --priority)`,
    );
  }
  // Run now alone changes the scheduled jobs only: a ready job is due already.
  const states = changes.priority === undefined ? (['scheduled'] as const) : updatable;
  const change = { action: 'update', changes, states, verb: 'change', done: 'changed' } as const;
  if (!(await countedAndConfirmed(io, client, args, filter, change, keyed))) return;
  const updated = await client.updateJobs(filter, changes, keyed);
  if (wantsJson(args)) printJson(io, { ...filter, updated });
  else print(io, `updated ${describeFilter(updated, filter, states)}`);
}

export function registerJobControlCommands(parser: Argv, io: CliIo): void {
  parser.command(
    'cancel [ids..]',
    'Cancel jobs that have not finished: waiting ones at once, running ones once their worker stops',
    (y) =>
      withConnection(io, withSelection(y, cancellable))
        .example('$0 cancel 0190a4c2-…', 'one job')
        .example('$0 cancel --queue emails --type digest --dry-run', 'count first')
        .example('$0 cancel --queue emails --type digest --yes', 'every waiting or running digest job')
        .example('$0 cancel --queue emails --yes --background', 'print the operation; do not wait'),
    (args) =>
      runWithClient(io, args, async (client) => {
        const selection = selectionOf(args);
        if ('filter' in selection) return cancelMatching(io, client, args, selection.filter, selection.keyed);
        const results = [];
        for (const id of selection.ids) results.push({ id, ...(await client.cancelJob(id)) });
        if (wantsJson(args)) {
          printJson(io, results);
          return;
        }
        for (const r of results) {
          if (r.state === 'leased')
            print(io, `cancel of ${r.id} asked: its worker was told to stop; it ends cancelled`);
          else if (r.previousState === 'cancelled') print(io, `${r.id} was already cancelled`);
          else print(io, `cancelled ${r.id} (it was ${r.previousState})`);
        }
      }),
  );
  parser.command(
    'update [ids..]',
    'Change waiting jobs: priority, run time, group, or run them now',
    (y) =>
      withConnection(
        io,
        withSelection(y, updatable)
          .option('priority', { type: 'number', describe: '0 to 9, higher first' })
          .option('run-now', {
            type: 'boolean',
            describe: 'Due now: a scheduled or retrying job becomes ready',
          })
          .option('run-at', { type: 'string', describe: 'Due at this time (ISO 8601); ids only' })
          .option('delay', { type: 'string', describe: 'Due after this long, e.g. 30s, 5m; ids only' })
          .option('new-group', {
            type: 'string',
            describe: 'Move the job to this group ("" takes it out of its group); ids only',
          })
          .example('$0 update 0190a4c2-… --priority 9 --run-now', 'one job, first in line now')
          .example('$0 update 0190a4c2-… --new-group tenant-7', 'one job, now in group tenant-7')
          .example('$0 update --queue reports --type monthly --run-now --dry-run', 'count first')
          .example(
            '$0 update --queue reports --type monthly --run-now --yes',
            'run every scheduled monthly report now',
          ),
      ),
    (args) =>
      runWithClient(io, args, async (client) => {
        const selection = selectionOf(args);
        const changes = changesOf(args);
        if ('ids' in selection) {
          const jobs = [];
          for (const id of selection.ids) jobs.push(await client.updateJob(id, changes));
          if (wantsJson(args))
            printJson(
              io,
              jobs.map((j) => ({
                id: j.id,
                state: j.state,
                priority: j.priority,
                runAt: j.runAt,
                group: j.group,
              })),
            );
          else
            for (const j of jobs) {
              const group = j.group === null ? '' : `, group ${j.group}`;
              print(
                io,
                `updated ${j.id}: ${j.state}, priority ${j.priority}${group}, due ${j.runAt.toISOString()}`,
              );
            }
          return;
        }
        return updateMatching(io, client, args, selection.filter, changes, selection.keyed);
      }),
  );
}
