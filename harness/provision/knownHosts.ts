// known_hosts verification as OpenSSH does it: plain and hashed (`|1|salt|hmac`) host patterns,
// `[host]:port` for non-22 ports, wildcards and negation, `@revoked` keys. Pure: it takes the
// file's text and the key the server presented (the SSH wire-format blob ssh2 hands over).
import { createHmac, createHash } from 'node:crypto';

export type HostKeyVerdict =
  | { kind: 'match'; line: number }
  | { kind: 'unknown'; knownTypes: string[] }
  | { kind: 'changed'; line: number; keyType: string }
  | { kind: 'revoked'; line: number };

interface Entry {
  line: number;
  marker: '' | '@revoked' | '@cert-authority';
  patterns: string;
  keyType: string;
  keyB64: string;
}

/** The name OpenSSH looks hosts up by: `host`, or `[host]:port` when the port is not 22. */
export function hostLookupName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** The key type written inside an SSH public key blob (e.g. `ssh-ed25519`). */
export function keyTypeOfBlob(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const len = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + len).toString('latin1');
}

/** SHA256 fingerprint as OpenSSH prints it, so messages can be compared with `ssh-keygen -lf`. */
export function fingerprintOfBlob(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

function parseEntries(text: string): Entry[] {
  const entries: Entry[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: Entry['marker'] = '';
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields.shift() as Entry['marker'];
    if (fields.length < 3) return;
    entries.push({ line: i + 1, marker, patterns: fields[0], keyType: fields[1], keyB64: fields[2] });
  });
  return entries;
}

function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

function hashedMatches(pattern: string, name: string): boolean {
  const [, magic, saltB64, hashB64] = pattern.split('|');
  if (magic !== '1' || !saltB64 || !hashB64) return false;
  const mac = createHmac('sha1', Buffer.from(saltB64, 'base64')).update(name).digest('base64');
  return mac === hashB64;
}

function patternsMatch(patterns: string, name: string): boolean {
  if (patterns.startsWith('|')) return hashedMatches(patterns, name);
  let matched = false;
  for (const p of patterns.split(',')) {
    const negated = p.startsWith('!');
    const glob = negated ? p.slice(1) : p;
    if (globToRegExp(glob).test(name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** Decides whether `keyBlob` is the known key of host:port according to a known_hosts text. */
export function verifyHostKey(knownHostsText: string, host: string, port: number, keyBlob: Buffer): HostKeyVerdict {
  const name = hostLookupName(host, port);
  const presentedB64 = keyBlob.toString('base64');
  const presentedType = keyTypeOfBlob(keyBlob);
  const forHost = parseEntries(knownHostsText).filter((e) => e.marker !== '@cert-authority' && patternsMatch(e.patterns, name));
  const revoked = forHost.find((e) => e.marker === '@revoked' && e.keyB64 === presentedB64);
  if (revoked) return { kind: 'revoked', line: revoked.line };
  const plain = forHost.filter((e) => e.marker === '');
  const match = plain.find((e) => e.keyB64 === presentedB64);
  if (match) return { kind: 'match', line: match.line };
  const sameType = plain.find((e) => e.keyType === presentedType);
  if (sameType) return { kind: 'changed', line: sameType.line, keyType: presentedType };
  return { kind: 'unknown', knownTypes: [...new Set(plain.map((e) => e.keyType))] };
}

/** Key types known for host:port, so the client can ask the server for one of those first. */
export function knownKeyTypes(knownHostsText: string, host: string, port: number): string[] {
  const name = hostLookupName(host, port);
  return [...new Set(parseEntries(knownHostsText).filter((e) => e.marker === '' && patternsMatch(e.patterns, name)).map((e) => e.keyType))];
}

/** The line `--accept-new-host-key` appends to pin a key (plain host name, like ssh's default). */
export function knownHostsLine(host: string, port: number, keyBlob: Buffer): string {
  return `${hostLookupName(host, port)} ${keyTypeOfBlob(keyBlob)} ${keyBlob.toString('base64')}\n`;
}
