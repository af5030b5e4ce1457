/** `sepp enqueue QUEUE TYPE`: put one job on a queue. */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { Argv } from 'yargs';
import type { EnqueueOptions } from '../../../clients/typescript/src/index.ts';
import { parseDurationMs } from '../../config/index.ts';
import { integerFlag, UsageError } from '../failure.ts';
import { type CliIo, pathIn, readAll } from '../io.ts';
import { print, printJson, runWithClient, withConnection } from './connection.ts';
import { durationFlag, oneOf, timeFlag } from './flag-values.ts';

const typesByExtension: Record<string, string> = {
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.csv': 'text/csv',
  '.xml': 'application/xml',
};

async function readPayload(
  io: CliIo,
  args: { json?: string | undefined; file?: string | undefined },
): Promise<{ payload: Buffer; contentType: string | undefined }> {
  if (args.json !== undefined && args.file !== undefined)
    throw new UsageError('give --json or --file, not both');
  if (args.json !== undefined) {
    try {
      JSON.parse(args.json);
    } catch (error) {
      throw new UsageError(
        `--json is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return { payload: Buffer.from(args.json, 'utf8'), contentType: 'application/json' };
  }
  if (args.file !== undefined) {
    try {
      // "-" reads standard input, so payloads can be piped in.
      const payload = args.file === '-' ? await readAll(io.stdin) : readFileSync(pathIn(io, args.file));
      return { payload, contentType: typesByExtension[extname(args.file).toLowerCase()] };
    } catch (error) {
      throw new UsageError(`--file ${args.file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { payload: Buffer.alloc(0), contentType: undefined };
}

const maxInt32 = 2 ** 31 - 1;

/** --delay: "30s" and the like, or a bare integer of milliseconds (as settings ending in _ms take). */
function delayMs(text: string): number {
  if (/^\s*\d{1,15}\s*$/.test(text)) return Number(text.trim());
  const delay = parseDurationMs(text);
  if (!delay.ok) throw new UsageError(`--delay ${delay.message}`);
  return delay.value;
}

function parseMetadata(entries: readonly string[] | undefined): Record<string, string> | undefined {
  if (entries === undefined || entries.length === 0) return undefined;
  const pairs = entries.map((entry) => {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new UsageError(`--meta ${entry}: write KEY=VALUE`);
    return [entry.slice(0, eq), entry.slice(eq + 1)] as const;
  });
  // fromEntries makes own properties even of keys like "__proto__".
  return Object.fromEntries(pairs);
}

export function registerEnqueueCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'enqueue <queue> <type>',
    'Enqueue one job',
    (y) =>
      withConnection(
        io,
        y
          .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
          .positional('type', { type: 'string', demandOption: true, describe: 'Job type' })
          .option('json', {
            type: 'string',
            requiresArg: true,
            describe: 'Payload as JSON text (content type application/json)',
          })
          .option('file', {
            type: 'string',
            requiresArg: true,
            describe: 'Payload from a file ("-" for standard input)',
          })
          .option('content-type', {
            type: 'string',
            requiresArg: true,
            describe: 'Content type of the payload',
          })
          .option('priority', {
            type: 'string',
            requiresArg: true,
            describe: 'An integer from 0 to 9, higher first (default 0)',
          })
          .option('delay', {
            type: 'string',
            requiresArg: true,
            describe: 'Run after this long: 30s, 5m, 2h (units ms, s, m, h, d) or an integer of milliseconds',
          })
          .option('run-at', {
            type: 'string',
            requiresArg: true,
            describe: 'Run at this time (ISO 8601, e.g. 2026-05-01T09:00:00Z)',
          })
          .option('key', {
            type: 'string',
            requiresArg: true,
            describe:
              'Idempotency key: a repeat is not stored while the key is taken (dedup window, or job unfinished)',
          })
          .option('unique-while-active', {
            type: 'boolean',
            describe: 'With --key: a repeat is a duplicate exactly while a job with the key is unfinished',
          })
          .option('ttl', {
            type: 'string',
            requiresArg: true,
            describe: 'Do not start the job after this long, e.g. 10m (expiry)',
          })
          .option('expires-at', {
            type: 'string',
            requiresArg: true,
            describe: 'Do not start the job at or after this time (ISO 8601)',
          })
          .option('timeout', {
            type: 'string',
            requiresArg: true,
            describe:
              "Hard execution timeout of each attempt, e.g. 5m: then it fails (reason timeout), extended or not (default: the queue's default_timeout_ms)",
          })
          .option('max-attempts', {
            type: 'string',
            requiresArg: true,
            describe: "Deliveries before the job goes dead (default: the queue's max_attempts)",
          })
          .option('meta', {
            type: 'string',
            requiresArg: true,
            array: true,
            describe: 'Metadata KEY=VALUE (repeatable)',
          })
          .option('depends-on', {
            type: 'string',
            requiresArg: true,
            array: true,
            describe:
              'Job ids this job waits for, comma-separated or repeated (it waits until they completed)',
          })
          .option('on-dependency-failure', {
            type: 'string',
            requiresArg: true,
            choices: ['cancel', 'run', 'wait'],
            describe:
              'What a failed dependency does to it: cancel it (default), run it anyway, or keep waiting',
          })
          .option('group', {
            type: 'string',
            requiresArg: true,
            describe: "The job's group (a tenant, a customer): groups take turns and have their own limits",
          })
          .option('debounce-key', {
            type: 'string',
            requiresArg: true,
            describe:
              'Debounce key: a waiting, never-leased job of the queue with this key takes this payload instead of a new job',
          })
          .option('debounce', {
            type: 'string',
            requiresArg: true,
            describe:
              'With --debounce-key: run once no enqueue with the key came for this long, e.g. 30s (default 0)',
          })
          .option('debounce-max', {
            type: 'string',
            requiresArg: true,
            describe:
              'With --debounce-key: never push the job back more than this from its first enqueue, e.g. 5m',
          })
          .example('$0 enqueue emails send --json \'{"to":"ada@example.com"}\'', 'a JSON job')
          .example(
            '$0 enqueue reports build --file report.json --delay 10m -o json',
            'later, output for scripts',
          )
          .example(
            '$0 enqueue alerts page --json \'{"id":7}\' --ttl 5m',
            'worthless if not started in 5 minutes',
          )
          .example(
            '$0 enqueue etl load --depends-on ID1,ID2 --on-dependency-failure run',
            'once both jobs ended',
          )
          .example(
            '$0 enqueue search reindex --json \'{"doc":7}\' --debounce-key doc-7 --debounce 30s --debounce-max 5m',
            'one reindex per burst of edits',
          ),
        false,
      ),
    (args) =>
      runWithClient(io, args, async (client) => {
        const { payload, contentType } = await readPayload(io, args);
        const options: EnqueueOptions = {};
        const type = args['content-type'] ?? contentType;
        if (type !== undefined) options.contentType = type;
        if (args.priority !== undefined)
          options.priority = integerFlag('priority', args.priority, { min: 0, max: 9 });
        oneOf({ delay: args.delay, 'run-at': args['run-at'] });
        if (args.delay !== undefined) options.delayMs = delayMs(args.delay);
        if (args['run-at'] !== undefined) options.runAt = timeFlag('run-at', args['run-at']);
        if (args.key !== undefined) options.idempotencyKey = args.key;
        if (args['unique-while-active'] === true) {
          if (args.key === undefined) throw new UsageError('--unique-while-active needs --key');
          options.uniqueWhileActive = true;
        }
        oneOf({ ttl: args.ttl, 'expires-at': args['expires-at'] });
        if (args.ttl !== undefined) options.ttlMs = durationFlag('ttl', args.ttl);
        if (args['expires-at'] !== undefined) options.expiresAt = timeFlag('expires-at', args['expires-at']);
        if (args.timeout !== undefined) options.executionTimeoutMs = durationFlag('timeout', args.timeout);
        if (args['max-attempts'] !== undefined) {
          options.maxAttempts = integerFlag('max-attempts', args['max-attempts'], {
            min: 1,
            max: maxInt32,
          });
        }
        const metadata = parseMetadata(args.meta);
        if (metadata !== undefined) options.metadata = metadata;
        if (args.group !== undefined) options.group = args.group;
        const dependsOn = (args['depends-on'] ?? []).flatMap((ids) => ids.split(',')).map((id) => id.trim());
        if (dependsOn.some((id) => id === '')) throw new UsageError('--depends-on: an empty job id');
        if (dependsOn.length > 0) options.dependsOn = dependsOn;
        const policy = args['on-dependency-failure'];
        if (policy !== undefined) {
          if (dependsOn.length === 0) throw new UsageError('--on-dependency-failure needs --depends-on');
          options.onDependencyFailure = policy as NonNullable<EnqueueOptions['onDependencyFailure']>;
        }
        if (args['debounce-key'] !== undefined) options.debounceKey = args['debounce-key'];
        for (const [flag, field] of [
          ['debounce', 'debounceMs'],
          ['debounce-max', 'debounceMaxMs'],
        ] as const) {
          const value = args[flag];
          if (value === undefined) continue;
          if (args['debounce-key'] === undefined) throw new UsageError(`--${flag} needs --debounce-key`);
          options[field] = durationFlag(flag, value);
        }
        const result = await client.enqueue(args.queue, args.type, payload, options);
        // Here --json is the payload, so only --output json selects output for scripts.
        if (args.output === 'json') printJson(io, result);
        else if (result.deduplicated) {
          print(
            io,
            `already enqueued ${result.id} on ${args.queue} (key ${args.key} was seen before; nothing new stored)`,
          );
        } else if (result.debounced) {
          print(
            io,
            `debounced into ${result.id} on ${args.queue} (it waits with key ${args['debounce-key']}; it now holds this payload)`,
          );
        } else if (dependsOn.length > 0) {
          print(io, `enqueued ${result.id} on ${args.queue} after ${dependsOn.join(', ')}`);
        } else print(io, `enqueued ${result.id} on ${args.queue}`);
      }),
  );
}
