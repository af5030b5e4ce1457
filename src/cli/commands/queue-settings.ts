/**
 * `sepp queue show QUEUE`, `sepp queue set QUEUE KEY=VALUE…` and `sepp queue
 * reset QUEUE KEY…|--all`: a queue's settings with where each comes from, and
 * run-time overrides of them (admin role), which the server checks with the
 * config file's rules and keeps across restarts.
 */
import type { Argv } from 'yargs';
import type { QueueInfo } from '../../../clients/typescript/src/index.ts';
import { queueSettingText } from '../../config/index.ts';
import { UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { table } from './format.ts';
import { queueDeleteCommand } from './pause-resume.ts';
import { unknownQueue } from './unknown-queue.ts';

/** How each source reads in the table. */
const sourceLabels: Readonly<Record<string, string>> = {
  default: 'default',
  queue_defaults: 'file [queue_defaults]',
  queue: 'file [queues.NAME]',
  override: 'override',
};

/** A queue's settings for people: one row per setting, the file's value beside an override. */
export function settingsTable(queue: QueueInfo): string {
  return table(
    ['SETTING', 'VALUE', 'SOURCE', 'FILE VALUE'],
    queue.settingValues.map((s) => [
      s.key,
      queueSettingText(s.key, s.value),
      (sourceLabels[s.source] ?? s.source).replace('NAME', queue.name),
      s.source === 'override' ? queueSettingText(s.key, s.fileValue) : '',
    ]),
  );
}

function printQueue(io: CliIo, queue: QueueInfo, json: boolean, headline?: string): void {
  if (json) {
    printJson(io, queue);
    return;
  }
  if (headline !== undefined) print(io, headline);
  print(io, settingsTable(queue));
}

/** `KEY=VALUE` arguments → settings; the value is everything after the first `=`. */
function assignments(pairs: readonly string[]): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) {
      throw new UsageError(
        `${pair}: write each setting as KEY=VALUE, e.g. max_attempts=10 or backoff_base_ms=2s`,
      );
    }
    const key = pair.slice(0, at).trim();
    if (Object.hasOwn(settings, key)) throw new UsageError(`${key} is given twice`);
    settings[key] = pair.slice(at + 1).trim();
  }
  return settings;
}

function queueArg<T>(y: Argv<T>) {
  return y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' });
}

/** Adds show, set and reset to the `queue` command. */
export function queueSettingsCommands<T>(io: CliIo, y: Argv<T>): Argv<T> {
  return y
    .command(
      'show <queue>',
      "A queue's settings, each with its source (default, config file, run-time override)",
      (c) => withConnection(io, queueArg(c)),
      (args) =>
        runWithClient(io, args, async (client) => {
          const queues = await client.listQueues();
          const queue = queues.find((q) => q.name === args.queue);
          if (queue === undefined)
            throw unknownQueue(
              args.queue,
              queues.map((q) => q.name),
            );
          printQueue(io, queue, wantsJson(args));
        }),
    )
    .command(
      'set <queue> <settings..>',
      "Override a queue's settings while the server runs (admin key): KEY=VALUE as in the config file",
      (c) =>
        withConnection(io, queueArg(c))
          .positional('settings', {
            type: 'string',
            array: true,
            demandOption: true,
            describe: 'KEY=VALUE, e.g. max_attempts=10 backoff_base_ms=2s max_payload_bytes=4MiB',
          })
          .example('$0 queue set emails max_attempts=10 backoff_base_ms=2s', '')
          .example('$0 queue set emails \'allowed_types=["send", "resend"]\'', ''),
      (args) =>
        runWithClient(io, args, async (client) => {
          const settings = assignments(args.settings);
          const queue = await client.setQueueSettings(args.queue, settings);
          printQueue(io, queue, wantsJson(args), `set ${Object.keys(settings).join(', ')} on ${args.queue}`);
        }),
    )
    .command(
      'reset <queue> [keys..]',
      'Remove run-time overrides, so the config file applies again (admin key)',
      (c) =>
        withConnection(io, queueArg(c))
          .positional('keys', {
            type: 'string',
            array: true,
            describe: 'Settings to reset, e.g. max_attempts',
          })
          .option('all', { type: 'boolean', describe: 'Reset every override of the queue' }),
      (args) =>
        runWithClient(io, args, async (client) => {
          const keys = args.keys ?? [];
          if (keys.length > 0 === (args.all === true)) {
            throw new UsageError('name the settings to reset, or give --all (not both)');
          }
          const queue = await client.resetQueueSettings(args.queue, args.all === true ? 'all' : keys);
          const what = args.all === true ? 'every override' : keys.join(', ');
          printQueue(io, queue, wantsJson(args), `reset ${what} on ${args.queue}`);
        }),
    );
}

export function registerQueueCommands(parser: Argv, io: CliIo): void {
  parser.command('queue', "Show and change a queue's settings, or delete an empty queue", (y) =>
    queueDeleteCommand(io, queueSettingsCommands(io, y)).demandCommand(
      1,
      'name a queue subcommand: show, set, reset or delete',
    ),
  );
}
