// Types for secret-grep.mjs, so tests can import it under strict TypeScript.
export interface CapturedLogsCheck {
  ok: boolean;
  /** One line: how many log lines from how many captures were checked against how many secrets. */
  summary: string;
  /** Each finding (file:line, the kinds of secret, the line masked) and each missing piece of evidence. */
  problems: string[];
}

export function checkCapturedLogs(dir: string, options: { requireEvidence: boolean }): CapturedLogsCheck;
