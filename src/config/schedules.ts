/**
 * `[[schedules]]`: periodic jobs declared in the config. Each table is read
 * against scheduleSpec (types, units, ranges), then checked as the engine
 * checks a schedule created over the API (cron expression, timezone, the job
 * template against the queues' settings), so `sepp config check` finds a bad
 * schedule before the server starts. The engine reconciles the list when it
 * opens and on a reload: schedules added, changed or no longer listed are
 * added, updated or removed.
 */
import { QueueRegistry } from '../engine/queue-registry.ts';
import { checkSchedule } from '../engine/schedules/index.ts';
import type { ScheduleSpec } from '../engine/schedules/types.ts';
import { asTable, type ConfigReader } from './reader.ts';
import { type ScheduleEntry, scheduleSpec } from './schedule-spec.ts';
import type { SectionSpec } from './schema.ts';
import type { EngineConfig } from './types.ts';

/** The config's schedules, each checked as the engine would; problems go to the reader. */
export function readSchedules(
  reader: ConfigReader,
  value: unknown,
  engine: Omit<EngineConfig, 'schedules'>,
  nowMs: number,
): ScheduleSpec[] {
  if (value === undefined) return [];
  const fix = 'write each schedule as its own [[schedules]] table';
  if (!Array.isArray(value)) {
    reader.problem('schedules', `must be a list of tables: ${fix}`);
    return [];
  }
  const queues = new QueueRegistry(engine);
  const specs: ScheduleSpec[] = [];
  const firstByName = new Map<string, string>();
  for (const [index, item] of value.entries()) {
    const path = `schedules[${index}]`;
    const table = asTable(item);
    if (table === undefined) {
      reader.problem(path, `must be a table: ${fix}`);
      continue;
    }
    const entry = reader.section(path, scheduleSpec as SectionSpec<ScheduleEntry>, table, {
      schemaPath: 'schedules[]',
    });
    const missing = ['name', 'queue', 'type'].filter((key) => table[key] === undefined);
    for (const key of missing)
      reader.problem(`${path}.${key}`, 'is missing; every [[schedules]] needs name, queue and type');
    const untimed = table.cron === undefined && table.interval_ms === undefined;
    if (untimed) {
      reader.problem(
        `${path}.cron`,
        'is missing: give a cron expression (cron = "0 3 * * *") or an interval (interval_ms = "15m")',
      );
    }
    const failed = Object.keys(table).some((key) => reader.failed.has(`${path}.${key}`));
    if (
      missing.length > 0 ||
      untimed ||
      failed ||
      entry.name === undefined ||
      entry.queue === undefined ||
      entry.type === undefined
    ) {
      continue;
    }
    const first = firstByName.get(entry.name);
    if (first !== undefined) {
      reader.problem(
        `${path}.name`,
        `"${entry.name}" is already used by ${first}; schedule names must be unique`,
      );
      continue;
    }
    firstByName.set(entry.name, path);
    const spec = toSpec(entry.name, entry.queue, entry.type, entry);
    // An end that has passed is no mistake here: the schedule's time is over, and the server must still start.
    const check = checkSchedule(spec, queues, engine.limits, nowMs, nowMs, 'accept');
    if (!check.ok) {
      reader.problem(`${path}.${configKeyOf(check.field, check.message)}`, check.message);
      continue;
    }
    specs.push(spec);
  }
  if (value.length > engine.limits.maxSchedules && !reader.failed.has('limits.max_schedules')) {
    reader.problem(
      'limits.max_schedules',
      `is ${engine.limits.maxSchedules} but the config declares ${value.length} [[schedules]]; raise the limit or remove schedules`,
    );
  }
  return specs;
}

function toSpec(name: string, queue: string, type: string, given: Partial<ScheduleEntry>): ScheduleSpec {
  const spec: ScheduleSpec = {
    name,
    timezone: given.timezone ?? 'UTC',
    template: {
      queue,
      type,
      payload: Buffer.from(given.payload ?? '', 'utf8'),
      contentType: given.contentType ?? 'application/octet-stream',
      priority: given.priority ?? 0,
    },
    misfire: given.misfire ?? 'run_latest',
    overlap: given.overlap ?? 'allow',
    jitterMs: given.jitterMs ?? 0,
  };
  if (given.cron !== undefined) spec.cron = given.cron;
  if (given.intervalMs !== undefined) spec.intervalMs = given.intervalMs;
  if (given.metadata !== undefined) spec.template.metadata = given.metadata;
  if (given.maxAttempts !== undefined) spec.template.maxAttempts = given.maxAttempts;
  if (given.leaseMs !== undefined) spec.template.leaseMs = given.leaseMs;
  if (given.catchUpMax !== undefined) spec.catchUpMax = given.catchUpMax;
  if (given.startAt !== undefined) spec.startAtMs = given.startAt;
  if (given.endAt !== undefined) spec.endAtMs = given.endAt;
  return spec;
}

/** The TOML key an engine field name (`template.queue`, `start_at_ms`) is written as. */
function configKeyOf(field: string, message: string): string {
  if (field === 'template') return /job type/.test(message) ? 'type' : 'name';
  if (field === 'start_at_ms' || field === 'end_at_ms') return field.replace(/_ms$/, '');
  return field.replace(/^template\./, '');
}
