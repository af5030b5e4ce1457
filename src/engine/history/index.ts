export { historyWindows, JobHistory } from './job-history.ts';
export type { HistoryAnswer, HistoryWindow } from './types.ts';
