/**
 * The signature of a push delivery, so the receiver can tell that sepp sent
 * it and that nobody changed it: the header
 *
 *     Sepp-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
 *
 * over the exact bytes of the body. The timestamp is signed too, so a
 * receiver that refuses old ones (docs/http.md says 5 minutes) cannot be fed
 * a recorded delivery later. Several `v1=` values may come in the future
 * while a secret is rotated; a receiver accepts any one that matches.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const signatureHeader = 'Sepp-Signature';

export function signatureOf(secret: Buffer, timestampS: number, body: Buffer | string): string {
  const mac = createHmac('sha256', secret).update(`${timestampS}.`).update(body).digest('hex');
  return `t=${timestampS},v1=${mac}`;
}

/**
 * Checks a Sepp-Signature header against the body, as a receiver does (the
 * tests use it; docs/http.md shows the same in Node and Python). False for
 * a wrong secret or body, a missing part, or a timestamp more than
 * `toleranceS` away from `nowS`.
 */
export function verifySignature(
  secret: Buffer,
  header: string,
  body: Buffer | string,
  nowS: number,
  toleranceS = 300,
): boolean {
  const parts = header.split(',').map((part) => part.trim().split('='));
  const t = Number(parts.find(([key]) => key === 't')?.[1]);
  if (!Number.isSafeInteger(t) || Math.abs(nowS - t) > toleranceS) return false;
  const expected = Buffer.from(signatureOf(secret, t, body).split('v1=')[1] ?? '', 'hex');
  return parts
    .filter(([key]) => key === 'v1')
    .some(([, value]) => {
      const given = Buffer.from(value ?? '', 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
