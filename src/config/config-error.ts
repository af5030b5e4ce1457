/**
 * Configuration problems are collected, not thrown one at a time: a user who
 * fixes one setting should not have to restart to learn about the next.
 */
import { SeppError } from '../engine/errors.ts';
import { listedItemsMax, summarizeList } from './bounded-message.ts';

export interface ConfigProblem {
  /**
   * The setting as written in TOML (`queues.emails.max_payload_bytes`,
   * `grpc.api_keys[1].role`), or the flag / variable / file the problem is about.
   */
  readonly key: string;
  /** Where a bad value came from when not the config file: `--grpc-listen`, `SEPP_GRPC_LISTEN`. */
  readonly source?: string;
  /** What is wrong and how to fix it. */
  readonly message: string;
}

export function formatProblem(problem: ConfigProblem): string {
  const from = problem.source === undefined ? '' : ` (from ${problem.source})`;
  return `${problem.key}${from}: ${problem.message}`;
}

/** Problems in one line for an error message: the first few, then how many more (`… and 995 more`). */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  return summarizeList(problems.map(formatProblem), listedItemsMax, '; ');
}

export class ConfigError extends SeppError {
  readonly problems: readonly ConfigProblem[];
  /** The config file the problems were found with, or null for none. */
  readonly configFile: string | null;

  constructor(problems: readonly ConfigProblem[], configFile: string | null) {
    const where = configFile === null ? 'the configuration' : configFile;
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    const lines = problems.map((p) => `  - ${formatProblem(p)}`).join('\n');
    super('invalid_argument', `${where} has ${count}:\n${lines}`);
    this.name = 'ConfigError';
    this.problems = Object.freeze([...problems]);
    this.configFile = configFile;
  }
}
