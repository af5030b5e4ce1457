/**
 * Reading a secret from the user: on a terminal, a prompt on stderr and the
 * typed characters not echoed (raw mode: Enter ends, Backspace deletes, Ctrl-U
 * clears, Ctrl-C aborts); otherwise one line from standard input, so scripts
 * can pipe it in. Nothing read is ever written anywhere.
 */
import { CliError, exitCodes, UsageError } from '../failure.ts';
import type { CliInput, CliOutput } from '../io.ts';

/** Longest secret accepted, in characters (a bound on what is read, not a policy). */
export const secretMaxChars = 1024;

/** Reads typed lines from a terminal without echo; keeps what was typed ahead for the next prompt. */
export class HiddenPrompt {
  private ahead = '';

  constructor(
    private readonly input: CliInput,
    private readonly output: CliOutput,
  ) {}

  ask(prompt: string): Promise<string> {
    const { input, output } = this;
    // No echo before the prompt shows: whatever is typed once it is visible stays hidden.
    input.setRawMode?.(true);
    input.setEncoding('utf8');
    output.write(prompt);
    return new Promise((resolve, reject) => {
      let value = '';
      const finish = (result: () => void) => {
        input.off('data', onData);
        input.setRawMode?.(false);
        input.pause();
        output.write('\n');
        result();
      };
      const take = (chunk: string): boolean => {
        const chars = [...chunk];
        for (let i = 0; i < chars.length; i++) {
          const ch = chars[i] ?? '';
          if (ch === '\r' || ch === '\n') {
            this.ahead = chars.slice(i + 1).join('');
            finish(() => resolve(value));
            return true;
          }
          if (ch === '\u0003') {
            finish(() => reject(new CliError('interrupted; nothing printed', exitCodes.interrupted)));
            return true;
          }
          if (ch === '\u0004' && value === '') {
            finish(() => reject(new UsageError('no password given')));
            return true;
          }
          if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
          else if (ch === '\u0015') value = '';
          else if (ch >= ' ' && value.length < secretMaxChars) value += ch;
        }
        return false;
      };
      const onData = (chunk: string) => {
        take(chunk);
      };
      const typedAhead = this.ahead;
      this.ahead = '';
      if (take(typedAhead)) return;
      input.on('data', onData);
      input.resume();
    });
  }
}

/** Reads the first line of a non-terminal standard input (stops at the newline; EOF ends it too). */
export function readLine(input: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = () => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('error', onError);
      input.pause();
      resolve(text.replace(/\r$/, ''));
    };
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      const newline = text.indexOf('\n');
      if (newline >= 0) {
        text = text.slice(0, newline);
        done();
      } else if (text.length > secretMaxChars * 4) {
        input.off('data', onData);
        reject(new UsageError(`the line on standard input is longer than ${secretMaxChars} characters`));
      }
    };
    const onEnd = () => done();
    const onError = (error: Error) => reject(new CliError(`cannot read standard input: ${error.message}`, 1));
    input.on('data', onData);
    input.once('end', onEnd);
    input.once('error', onError);
    input.resume();
  });
}
