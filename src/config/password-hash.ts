/**
 * The admin password hash format, kept beside the config that stores it so
 * the writer (`sepp admin hash-password`), the validator (config loading) and
 * the checker (admin login) cannot disagree. It is the PHC string format for
 * scrypt, with unpadded standard base64:
 *
 *   $scrypt$ln=15,r=8,p=1$<salt>$<hash>
 *
 * `ln` is log2 of the CPU/memory cost N. The parameters travel with the hash,
 * so raising them later does not invalidate existing hashes.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface ScryptParams {
  /** log2 of the cost parameter N. */
  readonly logN: number;
  /** Block size. */
  readonly r: number;
  /** Parallelism. */
  readonly p: number;
}

export interface PasswordHash extends ScryptParams {
  readonly salt: Buffer;
  readonly hash: Buffer;
}

/** N = 32768, r = 8: about 32 MiB and tens of milliseconds per check. */
export const defaultScryptParams: ScryptParams = Object.freeze({ logN: 15, r: 8, p: 1 });

const limits = { logN: { min: 10, max: 20 }, r: { min: 1, max: 32 }, p: { min: 1, max: 16 } } as const;
const minSaltBytes = 16;
const minHashBytes = 32;
const hashBytes = 64;

const phcRe = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

export type PasswordHashParse = { ok: true; value: PasswordHash } | { ok: false; message: string };

export function parsePasswordHash(text: string): PasswordHashParse {
  const fix = 'generate one with `sepp admin hash-password`';
  const match = phcRe.exec(text);
  if (match === null) {
    return {
      ok: false,
      message: `is not a password hash of the form $scrypt$ln=…,r=…,p=…$salt$hash; ${fix}`,
    };
  }
  const [, ln = '', r = '', p = '', salt = '', hash = ''] = match;
  const params = { logN: Number(ln), r: Number(r), p: Number(p) };
  for (const name of ['logN', 'r', 'p'] as const) {
    const { min, max } = limits[name];
    if (params[name] < min || params[name] > max) {
      const label = name === 'logN' ? 'ln' : name;
      return { ok: false, message: `has scrypt ${label}=${params[name]}, outside ${min}..${max}; ${fix}` };
    }
  }
  const saltBytes = Buffer.from(salt, 'base64');
  const hashBuffer = Buffer.from(hash, 'base64');
  if (saltBytes.length < minSaltBytes || hashBuffer.length < minHashBytes) {
    return { ok: false, message: `has a salt or hash too short to be safe; ${fix}` };
  }
  return { ok: true, value: { ...params, salt: saltBytes, hash: hashBuffer } };
}

export function formatPasswordHash(value: PasswordHash): string {
  const b64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');
  return `$scrypt$ln=${value.logN},r=${value.r},p=${value.p}$${b64(value.salt)}$${b64(value.hash)}`;
}

function derive(password: string, salt: Buffer, params: ScryptParams, length: number): Promise<Buffer> {
  const N = 2 ** params.logN;
  return new Promise((resolve, reject) => {
    // maxmem must exceed 128·N·r or Node refuses; give it twice that.
    scrypt(
      password,
      salt,
      length,
      { N, r: params.r, p: params.p, maxmem: 256 * N * params.r },
      (err, key) => {
        if (err) reject(err);
        else resolve(key);
      },
    );
  });
}

/** Hashes a password into the stored form (a fresh random salt each time). */
export async function hashPassword(
  password: string,
  params: ScryptParams = defaultScryptParams,
): Promise<string> {
  const salt = randomBytes(minSaltBytes);
  const hash = await derive(password, salt, params, hashBytes);
  return formatPasswordHash({ ...params, salt, hash });
}

/**
 * True when `password` matches `stored` (the string form, as in the config);
 * compares in constant time. A malformed hash never matches.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (!parsed.ok) return false;
  const { value } = parsed;
  const candidate = await derive(password, value.salt, value, value.hash.length);
  return timingSafeEqual(candidate, value.hash);
}
