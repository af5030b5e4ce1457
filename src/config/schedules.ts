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
    if (
      missing.length > 0 ||
      entry.name === undefined ||
      entry.queue === undefined ||
      entry.type === undefined
    ) {
      continue;
    }
    const failed = Object.keys(table).some((key) => reader.failed.has(`${path}.${key}`));
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
    // Every problem the engine's check finds, not only its first (problemsOf), on what the
    // table's own checks passed: a key they refused is reported once, by them.
    let ok = !failed && !untimed;
    for (const problem of problemsOf(spec, queues, engine.limits, nowMs)) {
      ok = false;
      const key = `${path}.${configKeyOf(problem.field, problem.message)}`;
      if (!reader.failed.has(key)) reader.problem(key, problem.message);
    }
    if (!ok) continue;
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

/**
 * Every problem checkSchedule finds in `spec`: it stops at the first, so each
 * field it names is set to a value it accepts and the check runs again, until
 * it passes, names a field again, or names one that has no neutral value
 * (the queue, the job type). A few rounds at most: one per field.
 */
function problemsOf(
  spec: ScheduleSpec,
  queues: QueueRegistry,
  limits: EngineConfig['limits'],
  nowMs: number,
): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  // A schedule whose timing the table's checks refused is checked with a stand-in.
  let next: ScheduleSpec | undefined =
    spec.cron === undefined && spec.intervalMs === undefined ? { ...spec, intervalMs: 60_000 } : spec;
  const seen = new Set<string>();
  while (next !== undefined) {
    // An end that has passed is no mistake here: the schedule's time is over, and the server must still start.
    const check = checkSchedule(next, queues, limits, nowMs, nowMs, 'accept');
    if (check.ok || seen.has(check.field)) break;
    seen.add(check.field);
    problems.push({ field: check.field, message: check.message });
    next = withoutField(next, check.field);
  }
  return problems;
}

/** `spec` with `field` set to a value the check accepts, or undefined when it has none. */
function withoutField(spec: ScheduleSpec, field: string): ScheduleSpec | undefined {
  const { cron: _cron, intervalMs: _interval, ...untimed } = spec;
  const t = spec.template;
  switch (field) {
    case 'name':
      return { ...spec, name: 'schedule' };
    case 'cron':
    case 'interval_ms':
      return { ...untimed, intervalMs: 60_000 };
    case 'timezone':
      return { ...spec, timezone: 'UTC' };
    case 'start_at_ms':
    case 'end_at_ms': {
      const { startAtMs: _start, endAtMs: _end, ...rest } = spec;
      return rest;
    }
    case 'misfire':
      return { ...spec, misfire: 'run_latest' };
    case 'catch_up_max': {
      const { catchUpMax: _catchUp, ...rest } = spec;
      return rest;
    }
    case 'overlap':
      return { ...spec, overlap: 'allow' };
    case 'jitter_ms':
      return { ...spec, jitterMs: 0 };
    case 'template.payload':
      return { ...spec, template: { ...t, payload: new Uint8Array() } };
    case 'template.priority':
      return { ...spec, template: { ...t, priority: 0 } };
    case 'template.content_type':
      return { ...spec, template: { ...t, contentType: 'application/octet-stream' } };
    case 'template.metadata': {
      const { metadata: _metadata, ...rest } = t;
      return { ...spec, template: rest };
    }
    case 'template.max_attempts': {
      const { maxAttempts: _maxAttempts, ...rest } = t;
      return { ...spec, template: rest };
    }
    case 'template.lease_ms': {
      const { leaseMs: _leaseMs, ...rest } = t;
      return { ...spec, template: rest };
    }
    case 'template.timeout_ms': {
      const { timeoutMs: _timeoutMs, ...rest } = t;
      return { ...spec, template: rest };
    }
    default:
      return undefined;
  }
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
  if (given.timeoutMs !== undefined) spec.template.timeoutMs = given.timeoutMs;
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
