/** `sepp schedules [list]|show|pause|resume|trigger|delete`: the server's periodic jobs. */
import type { Argv } from 'yargs';
import type { Schedule } from '../../../clients/typescript/src/index.ts';
import { formatDurationMs } from '../../config/index.ts';
import { integerFlag } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { cell, table, time } from './format.ts';

/** When a schedule ticks, as one cell: its cron expression (and timezone) or interval. */
function timing(s: Schedule): string {
  if (s.cron !== null) return s.timezone === 'UTC' ? s.cron : `${s.cron} (${s.timezone})`;
  // As the config file writes it: `interval_ms = "15m"` shows as `every 15m`.
  return s.intervalMs === null ? '-' : `every ${formatDurationMs(s.intervalMs)}`;
}

function status(s: Schedule): string {
  if (s.paused) return 'paused';
  return s.nextTick === null ? 'ended' : 'active';
}

function lastRun(s: Schedule): string {
  if (s.lastRunAt === null) return '-';
  return `${time(s.lastRunAt)} ${s.lastOutcome ?? ''}`.trim();
}

/** A schedule as plain JSON for scripts: times as ISO strings, the payload as text when it is, else base64. */
export function scheduleJson(s: Schedule) {
  const payload = s.job.payload;
  const text = payload === null ? null : payload.toString('utf8');
  const isText = text !== null && Buffer.from(text, 'utf8').equals(payload ?? Buffer.alloc(0));
  return {
    ...s,
    job: {
      ...s.job,
      payload: payload === null ? null : isText ? text : payload.toString('base64'),
      payloadEncoding: payload === null ? null : isText ? 'text' : 'base64',
    },
  };
}

function describeSchedule(s: Schedule): string {
  const rows: [string, string][] = [
    ['name', s.name],
    ['source', s.source === 'config' ? 'config (change it in sepp.toml)' : 'api'],
    ['status', status(s)],
    ['schedule', timing(s)],
    ['job', `queue ${s.job.queue}, type ${s.job.type}, priority ${s.job.priority}`],
    ['payload', `${s.job.payloadBytes} bytes, ${s.job.contentType}`],
    ['misfire', s.misfire === 'catch_up' ? `catch_up (up to ${s.catchUpMax})` : s.misfire],
    ['overlap', s.overlap],
  ];
  if (s.jitterMs > 0) rows.push(['jitter', formatDurationMs(s.jitterMs)]);
  if (s.job.maxAttempts !== null) rows.push(['max attempts', String(s.job.maxAttempts)]);
  if (s.job.leaseMs !== null) rows.push(['lease', formatDurationMs(s.job.leaseMs)]);
  if (s.job.executionTimeoutMs !== null) rows.push(['timeout', formatDurationMs(s.job.executionTimeoutMs)]);
  const metadata = Object.entries(s.job.metadata);
  if (metadata.length > 0) rows.push(['metadata', metadata.map(([k, v]) => `${k}=${v}`).join(', ')]);
  if (s.startAt !== null) rows.push(['starts', time(s.startAt)]);
  if (s.endAt !== null) rows.push(['ends', time(s.endAt)]);
  rows.push(['last run', lastRun(s)]);
  if (s.lastDetail !== null) rows.push(['detail', s.lastDetail]);
  if (s.lastJobId !== null) rows.push(['last job', s.lastJobId]);
  rows.push(['ticks', `${s.ticksEnqueued} enqueued, ${s.ticksSkipped} skipped`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  lines.push(s.nextRuns.length === 0 ? 'next runs: none' : 'next runs');
  for (const run of s.nextRuns) lines.push(`  ${time(run)}`);
  return lines.join('\n');
}

function namePositional<T>(y: Argv<T>) {
  return y.positional('name', { type: 'string', demandOption: true, describe: 'Schedule name' });
}

export function registerScheduleCommands(parser: Argv, io: CliIo): void {
  parser.command('schedules', 'List and operate the periodic jobs the server enqueues (schedules)', (y) =>
    y
      .command(
        ['list', '$0'],
        'List schedules with their next run and last outcome (the default)',
        (c) => withConnection(io, c),
        (args) =>
          runWithClient(io, args, async (client) => {
            const schedules = await client.schedules.list();
            if (wantsJson(args)) {
              printJson(io, schedules.map(scheduleJson));
              return;
            }
            if (schedules.length === 0) {
              print(
                io,
                'no schedules (declare them as [[schedules]] in sepp.toml, or create them with the SDK)',
              );
              return;
            }
            print(
              io,
              table(
                ['NAME', 'SCHEDULE', 'JOB', 'STATUS', 'NEXT RUN', 'LAST RUN', 'SOURCE'],
                schedules.map((s) => [
                  s.name,
                  cell(timing(s), 40),
                  `${s.job.queue}/${s.job.type}`,
                  status(s),
                  time(s.nextRuns[0] ?? null),
                  lastRun(s),
                  s.source,
                ]),
              ),
            );
          }),
      )
      .command(
        'show <name>',
        'Show a schedule: its definition, last outcome and next run times',
        (c) =>
          withConnection(
            io,
            namePositional(c).option('next', {
              type: 'string',
              default: '5',
              describe: 'How many next runs (1-100)',
            }),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const nextRuns = integerFlag('next', args.next, { min: 1, max: 100 });
            const schedule = await client.schedules.get(args.name, { nextRuns });
            const runs = await client.schedules.runs(args.name);
            if (wantsJson(args)) {
              printJson(io, {
                ...scheduleJson(schedule),
                runs: runs.map((r) => ({
                  ...r,
                  runAt: r.runAt.toISOString(),
                  tick: r.tick?.toISOString() ?? null,
                })),
              });
              return;
            }
            print(io, describeSchedule(schedule));
            if (runs.length > 0) {
              print(io, 'last runs (newest first; the last 20 are kept)');
              for (const r of runs) {
                const job = r.jobId === null ? '' : `  job ${r.jobId}`;
                const detail = r.detail === null ? '' : `  ${r.detail}`;
                print(io, `  ${time(r.runAt)}  ${r.outcome}${job}${detail}`);
              }
            }
          }),
      )
      .command(
        'pause <name>',
        'Pause a schedule: no ticks until resumed',
        (c) => withConnection(io, namePositional(c)),
        (args) =>
          runWithClient(io, args, async (client) => {
            const schedule = await client.schedules.pause(args.name);
            if (wantsJson(args)) printJson(io, scheduleJson(schedule));
            else
              print(
                io,
                `paused schedule ${args.name}: no ticks until \`sepp schedules resume ${args.name}\``,
              );
          }),
      )
      .command(
        'resume <name>',
        'Resume a paused schedule (missed ticks follow its misfire policy)',
        (c) => withConnection(io, namePositional(c)),
        (args) =>
          runWithClient(io, args, async (client) => {
            const schedule = await client.schedules.resume(args.name);
            if (wantsJson(args)) printJson(io, scheduleJson(schedule));
            else print(io, `resumed schedule ${args.name}; next run ${time(schedule.nextRuns[0] ?? null)}`);
          }),
      )
      .command(
        'trigger <name>',
        "Enqueue the schedule's job now, outside its ticks",
        (c) => withConnection(io, namePositional(c)),
        (args) =>
          runWithClient(io, args, async (client) => {
            const enqueued = await client.schedules.trigger(args.name);
            if (wantsJson(args)) printJson(io, { schedule: args.name, ...enqueued });
            else print(io, `enqueued job ${enqueued.id} from schedule ${args.name}`);
          }),
      )
      .command(
        'delete <name>',
        'Delete a schedule made over the API (jobs it enqueued stay)',
        (c) => withConnection(io, namePositional(c)),
        (args) =>
          runWithClient(io, args, async (client) => {
            await client.schedules.delete(args.name);
            if (wantsJson(args)) printJson(io, { schedule: args.name, deleted: true });
            else print(io, `deleted schedule ${args.name}`);
          }),
      ),
  );
}
