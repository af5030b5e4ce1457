/**
 * The server's time as the browser sees it. Relative times ("12 s ago") are
 * measured against the server's clock, learnt from each API answer's Date
 * header, so a browser whose clock is off does not show jobs due "in 3 min"
 * that are due now.
 */
import { useEffect, useState } from 'preact/hooks';

let offsetMs = 0;

/** Called with each answer's Date header (whole seconds: offsets under 2 s are ignored). */
export function noteServerDate(header: string | null): void {
  if (header === null) return;
  const serverMs = Date.parse(header);
  if (Number.isNaN(serverMs)) return;
  const measured = serverMs - Date.now();
  offsetMs = Math.abs(measured) < 2000 ? 0 : measured;
}

export function serverNowMs(): number {
  return Date.now() + offsetMs;
}

/** Re-renders every `everyMs` with the server's current time (for relative times). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(serverNowMs);
  useEffect(() => {
    const timer = window.setInterval(() => setNow(serverNowMs()), everyMs);
    return () => window.clearInterval(timer);
  }, [everyMs]);
  return now;
}
