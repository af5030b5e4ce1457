// Types for test-report.mjs, so tests can import it under strict TypeScript.
export interface Counts {
  tests: number;
  passed: number;
  failed: number;
  cancelled: number;
  skipped: number;
  todo: number;
}

/** One line of scripts/test-events-reporter.mjs: a finished test or suite. */
export interface TestEvent {
  passed: boolean;
  name: string;
  nesting: number;
  suite: boolean;
  skip?: string;
  todo?: string;
  durationMs?: number;
  failureType?: string;
  why?: string;
}

export interface Result {
  file: string;
  durationMs: number;
  cpuMs: number | undefined;
  /** How long the file's process ran on after its last top-level test ended. */
  afterLastTestMs?: number;
  events?: TestEvent[];
  counts: Counts;
  skips: string[];
  ok: boolean;
  problems: string[];
  why: string;
}

export function fileResult(run: {
  file: string;
  code: number | null;
  signal: string | null;
  durationMs: number;
  cpuMs: number | undefined;
  afterLastTestMs?: number;
  events: TestEvent[];
  stderr: string;
}): Result;

/** Past this (ms), the summary lists a file whose process ran on after its last test. */
export const lingerListedMs: number;

export function checkResult(run: {
  file: string;
  code: number | null;
  signal: string | null;
  durationMs: number;
  output: string;
}): Result;

export function summary(
  results: Result[],
  run: { wallMs: number; label: string; slowest?: number; extra?: string[]; extraProblems?: string[] },
): { ok: boolean; lines: string[] };

export function slotLines(
  jobs: Array<{ label: string; startMs: number; buildWaitMs: number; endMs: number }>,
  run: { concurrency: number; wallMs: number },
): string[];

export function cpuLine(run: {
  cpuMs: number;
  wallMs: number;
  cores: number;
  machineBusy?: number;
  load?: number;
}): string;
