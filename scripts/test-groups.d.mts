// Types for test-groups.mjs, so tests can import it under strict TypeScript.
export interface Group {
  files: string[];
  estimateMs: number;
}
export function partition(
  files: readonly string[],
  count: number,
  estimateMs: (file: string) => number,
): Group[];
export function writeGroupEntry(path: string, files: readonly string[], root: string): void;
export interface FileEvents {
  events: Record<string, unknown>[];
  durationMs: number;
  cpuMs: number | undefined;
}
export function splitGroupEvents(
  files: readonly string[],
  events: readonly Record<string, unknown>[],
): { files: Map<string, FileEvents>; unfinished: Record<string, unknown>[] };
