// known_hosts matching as OpenSSH does it: plain, [host]:port, hashed |1|salt|hmac, wildcards and
// negation, changed and revoked keys, pin lines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { verifyHostKey, knownHostsLine, keyTypeOfBlob, knownKeyTypes, fingerprintOfBlob } from '../../harness/provision/knownHosts.ts';

// An ssh-ed25519 public key blob: string "ssh-ed25519" + string <32-byte key>.
function ed25519Blob(): Buffer {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]);
}
const hashed = (name: string, salt = Buffer.from('0123456789abcdefghij')) =>
  `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;

const key = ed25519Blob();
const other = ed25519Blob();
const b64 = (b: Buffer) => b.toString('base64');

test('plain entries: port 22 by bare name, other ports as [host]:port', () => {
  assert.equal(verifyHostKey(`gpu1,10.0.0.5 ssh-ed25519 ${b64(key)} comment\n`, 'gpu1', 22, key), { kind: 'match', line: 1 });
  assert.is(verifyHostKey(`gpu1 ssh-ed25519 ${b64(key)}\n`, 'gpu1', 2222, key).kind, 'unknown', 'a port-22 entry does not cover port 2222');
  assert.equal(verifyHostKey(`# c\n\n[gpu1]:2222 ssh-ed25519 ${b64(key)}\n`, 'gpu1', 2222, key), { kind: 'match', line: 3 });
});

test('hashed entries (|1|salt|hmac-sha1)', () => {
  assert.equal(verifyHostKey(`${hashed('[127.0.0.1]:2200')} ssh-ed25519 ${b64(key)}\n`, '127.0.0.1', 2200, key), { kind: 'match', line: 1 });
  assert.is(verifyHostKey(`${hashed('[127.0.0.1]:2201')} ssh-ed25519 ${b64(key)}\n`, '127.0.0.1', 2200, key).kind, 'unknown');
  assert.equal(verifyHostKey(`${hashed('gpu1')} ssh-ed25519 ${b64(other)}\n`, 'gpu1', 22, key), { kind: 'changed', line: 1, keyType: 'ssh-ed25519' });
});

test('wildcards and negation', () => {
  const text = `*.lan,!bad.lan ssh-ed25519 ${b64(key)}\n`;
  assert.is(verifyHostKey(text, 'gpu3.lan', 22, key).kind, 'match');
  assert.is(verifyHostKey(text, 'bad.lan', 22, key).kind, 'unknown');
  assert.is(verifyHostKey(`gpu? ssh-ed25519 ${b64(key)}\n`, 'gpu7', 22, key).kind, 'match');
});

test('changed key of the same type; another type only is unknown; revoked wins', () => {
  assert.equal(verifyHostKey(`gpu1 ssh-ed25519 ${b64(other)}\n`, 'gpu1', 22, key), { kind: 'changed', line: 1, keyType: 'ssh-ed25519' });
  assert.equal(verifyHostKey(`gpu1 ecdsa-sha2-nistp256 AAAA\n`, 'gpu1', 22, key), { kind: 'unknown', knownTypes: ['ecdsa-sha2-nistp256'] });
  assert.equal(verifyHostKey(`gpu1 ssh-ed25519 ${b64(key)}\n@revoked * ssh-ed25519 ${b64(key)}\n`, 'gpu1', 22, key), { kind: 'revoked', line: 2 });
  assert.equal(knownKeyTypes(`gpu1 ecdsa-sha2-nistp256 AAAA\ngpu1 ssh-ed25519 ${b64(other)}\n`, 'gpu1', 22), ['ecdsa-sha2-nistp256', 'ssh-ed25519']);
});

test('pin line, key type and fingerprint', () => {
  assert.is(knownHostsLine('127.0.0.1', 2200, key), `[127.0.0.1]:2200 ssh-ed25519 ${b64(key)}\n`);
  assert.is(verifyHostKey(knownHostsLine('127.0.0.1', 2200, key), '127.0.0.1', 2200, key).kind, 'match');
  assert.is(keyTypeOfBlob(key), 'ssh-ed25519');
  assert.match(fingerprintOfBlob(key), /^SHA256:[A-Za-z0-9+/]{43}$/);
});

test.run();
