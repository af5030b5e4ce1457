/** Schedules: periodic jobs kept by the server, their timing, checks and ticks. */
export { listNextRunsMax, nextRunsMax, type PutMode, Schedules } from './schedules.ts';
export { misfireGraceMs } from './ticks.ts';
export { isKnownTimezone, ScheduleTiming } from './timing.ts';
export * from './types.ts';
export { checkSchedule, tickKey, type ValidSchedule } from './validate.ts';
