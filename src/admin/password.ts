/**
 * Admin passwords: scrypt (node:crypto) in the PHC string format, unpadded
 * standard base64, the parameters travelling with the hash so that raising
 * them later leaves existing hashes valid:
 *
 *   $scrypt$ln=15,r=8,p=1$<salt>$<hash>
 *
 * `ln` is log2 of the cost N. `sepp admin hash-password` prints hashPassword's
 * output; login checks it with verifyPassword, in constant time.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  readonly logN: number;
  /** Block size. */
  readonly r: number;
  /** Parallelism. */
  readonly p: number;
}

/** N = 32768, r = 8, p = 1: 32 MiB and some tens of milliseconds per check. */
export const defaultScryptParams: ScryptParams = Object.freeze({ logN: 15, r: 8, p: 1 });

const paramRanges = { logN: { min: 10, max: 20 }, r: { min: 1, max: 32 }, p: { min: 1, max: 16 } } as const;
const saltBytes = 16;
const hashBytes = 64;
const minHashBytes = 32;
const phcPattern =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{22,})\$([A-Za-z0-9+/]{43,})$/;

interface ParsedHash extends ScryptParams {
  salt: Buffer;
  hash: Buffer;
}

/** Parses a stored hash; null when it is not one (a malformed hash never matches any password). */
export function parsePasswordHash(stored: string): ParsedHash | null {
  const match = phcPattern.exec(stored);
  if (match === null) return null;
  const [, ln = '', r = '', p = '', salt = '', hash = ''] = match;
  const params = { logN: Number(ln), r: Number(r), p: Number(p) };
  for (const name of ['logN', 'r', 'p'] as const) {
    const { min, max } = paramRanges[name];
    if (params[name] < min || params[name] > max) return null;
  }
  const parsed = { ...params, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
  return parsed.salt.length >= saltBytes && parsed.hash.length >= minHashBytes ? parsed : null;
}

function derive(password: string, salt: Buffer, params: ScryptParams, length: number): Promise<Buffer> {
  const N = 2 ** params.logN;
  return new Promise((resolve, reject) => {
    // maxmem must exceed 128·N·r or Node refuses; allow twice that.
    scrypt(
      password,
      salt,
      length,
      { N, r: params.r, p: params.p, maxmem: 256 * N * params.r },
      (error, key) => {
        if (error) reject(error);
        else resolve(key);
      },
    );
  });
}

const b64 = (buffer: Buffer): string => buffer.toString('base64').replace(/=+$/, '');

/** Hashes a password for the config (a fresh random salt each time). */
export async function hashPassword(
  password: string,
  params: ScryptParams = defaultScryptParams,
): Promise<string> {
  if (password.length === 0) throw new Error('the password is empty');
  const salt = randomBytes(saltBytes);
  const hash = await derive(password, salt, params, hashBytes);
  return `$scrypt$ln=${params.logN},r=${params.r},p=${params.p}$${b64(salt)}$${b64(hash)}`;
}

/** True when `password` matches `stored`; compares in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (parsed === null) return false;
  const candidate = await derive(password, parsed.salt, parsed, parsed.hash.length);
  return timingSafeEqual(candidate, parsed.hash);
}
