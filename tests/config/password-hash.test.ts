import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../src/config/password-hash.ts';

// The smallest allowed cost keeps the test fast; the format is the same.
const cheap = { logN: 10, r: 8, p: 1 };

test('a hash verifies its password and no other', async () => {
  const stored = await hashPassword('correct horse battery staple', cheap);
  assert.match(stored, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
  assert.equal(await verifyPassword('correct horse battery staple', stored), true);
  assert.equal(await verifyPassword('correct horse battery stapler', stored), false);
  assert.equal(await verifyPassword('anything', 'not a hash'), false);
});

test('every hash has its own salt', async () => {
  assert.notEqual(await hashPassword('same', cheap), await hashPassword('same', cheap));
});

test('malformed or weak hashes are refused with a way to make a good one', () => {
  const salt = Buffer.alloc(16, 1).toString('base64').replace(/=+$/, '');
  const hash = Buffer.alloc(64, 2).toString('base64').replace(/=+$/, '');
  assert.ok(parsePasswordHash(`$scrypt$ln=15,r=8,p=1$${salt}$${hash}`).ok);
  for (const text of [
    'hunter2',
    `$argon2id$v=19$m=65536,t=3,p=4$${salt}$${hash}`,
    `$scrypt$ln=4,r=8,p=1$${salt}$${hash}`,
    `$scrypt$ln=15,r=8,p=1$AAAA$${hash}`,
    `$scrypt$ln=15,r=8,p=1$${salt}$AAAA`,
  ]) {
    const parsed = parsePasswordHash(text);
    assert.ok(!parsed.ok, text);
    assert.match(parsed.message, /sepp admin hash-password/);
  }
});
