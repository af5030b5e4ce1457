/** Schedules: periodic jobs kept by the server, their timing, checks and ticks. */
export { type PutMode, Schedules } from './schedules.ts';
export * from './types.ts';
export { checkSchedule, scheduleFilter } from './validate.ts';
