/**
 * The settings of a `[[schedules]]` table (src/config/schedules.ts reads and
 * checks them; schema.ts lists them among every section). The job template's
 * fields are flat, times are TOML offset datetimes.
 */
import type { MisfirePolicy, OverlapPolicy } from '../engine/schedules/types.ts';
import { namePattern } from '../engine/settings.ts';
import {
  choiceField,
  durationField,
  type Field,
  integerField,
  stringField,
  stringTableField,
  textField,
  timeField,
} from './fields.ts';

const nameHelp = 'use letters, digits and . _ : - only';

/** A `[[schedules]]` table as written: the template's fields flat, times as TOML datetimes. */
export interface ScheduleEntry {
  readonly name: string;
  readonly cron: string;
  readonly intervalMs: number;
  readonly timezone: string;
  readonly queue: string;
  readonly type: string;
  readonly payload: string;
  readonly contentType: string;
  readonly priority: number;
  readonly metadata: Readonly<Record<string, string>>;
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly timeoutMs: number;
  readonly misfire: MisfirePolicy;
  readonly catchUpMax: number;
  readonly overlap: OverlapPolicy;
  readonly jitterMs: number;
  readonly startAt: number;
  readonly endAt: number;
}

/** Like schema.ts's SectionSpec (not imported: schema.ts lists this spec among its sections). */
type EntrySpec<T> = {
  readonly [K in keyof T]-?: {
    readonly field: Field<Exclude<T[K], null>>;
    readonly default?: string | number;
  };
};

const name = (maxLength: number) => stringField({ maxLength, pattern: { re: namePattern, help: nameHelp } });

export const scheduleSpec: EntrySpec<ScheduleEntry> = {
  name: { field: name(1024) },
  cron: { field: stringField({ maxLength: 256 }) },
  intervalMs: { field: durationField({ min: 1000, max: 366 * 86_400_000 }) },
  timezone: { field: stringField({ maxLength: 64 }), default: 'UTC' },
  queue: { field: name(1024) },
  type: { field: name(1024) },
  payload: { field: textField(), default: '' },
  contentType: { field: stringField({ maxLength: 255 }), default: 'application/octet-stream' },
  priority: { field: integerField({ min: 0, max: 9 }), default: 0 },
  metadata: { field: stringTableField() },
  maxAttempts: { field: integerField({ min: 1, max: 1000 }) },
  leaseMs: { field: durationField({ min: 1000, max: 7 * 86_400_000 }) },
  timeoutMs: { field: durationField({ min: 1, max: 30 * 86_400_000 }) },
  misfire: { field: choiceField<MisfirePolicy>(['run_latest', 'skip', 'catch_up']), default: 'run_latest' },
  catchUpMax: { field: integerField({ min: 1, max: 1000 }) },
  overlap: { field: choiceField<OverlapPolicy>(['allow', 'skip']), default: 'allow' },
  jitterMs: { field: durationField({ min: 0, max: 86_400_000 }), default: 0 },
  startAt: { field: timeField() },
  endAt: { field: timeField() },
};
