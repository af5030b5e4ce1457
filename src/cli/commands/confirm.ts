/** Confirming an action that cannot be undone: ask on a terminal, insist on --yes elsewhere. */
import { createInterface } from 'node:readline/promises';
import { Declined, UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';

/**
 * Resolves when the action may go ahead: `yes` was given, or the person at the
 * terminal answered y. Off a terminal without `yes` it refuses (exit 2,
 * naming `refusal`); a no at the terminal declines (exit 1, nothing done).
 */
export async function confirmOrRefuse(
  io: CliIo,
  yes: boolean | undefined,
  refusal: string,
  question: string,
): Promise<void> {
  if (yes === true) return;
  if (!io.stdin.isTTY) throw new UsageError(`refusing to ${refusal} without --yes (no terminal to ask)`);
  const prompt = createInterface({ input: io.stdin, output: io.stderr });
  try {
    const answer = await prompt.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new Declined('nothing changed');
  } finally {
    prompt.close();
  }
}
