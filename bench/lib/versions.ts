import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The installed version of an npm package, for the report. */
export function packageVersion(name: string): string {
  const url = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
  const parsed: unknown = JSON.parse(readFileSync(url, 'utf8'));
  if (
    typeof parsed === 'object' &&
    parsed !== null &&
    'version' in parsed &&
    typeof parsed.version === 'string'
  ) {
    return parsed.version;
  }
  return 'unknown';
}

/** The first line a command prints for `args` (e.g. `--version`), for the report. */
export function commandOutput(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, [...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .trim()
      .split('\n')[0]!;
  } catch (err) {
    throw new Error(
      `cannot run ${command}: ${err instanceof Error ? err.message : String(err)}. ` +
        'Install the peers with: bash bench/peers/install-peers.sh',
    );
  }
}
