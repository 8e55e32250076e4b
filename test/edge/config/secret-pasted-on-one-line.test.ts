/**
 * A secret written where its file's path belongs is never shown, even when YAML folded it onto one line.
 * A PEM key pasted as a plain multi-line value arrives as one line with spaces, which the check for line
 * breaks let through; the file check then printed the value in full for any errno but ENOENT and
 * ENOTDIR (ENAMETOOLONG, for a part longer than 255 bytes), to stderr, the reload's log line and doctor.
 */
import t, { type Test } from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parseConfig, shippedDialects } from '../../../edge/src/config/index.js';

const dialects = shippedDialects();
const NOT_SHOWN = "it is not shown. Put the secret in a file (mode 600) and give that file's path";

/** A config whose SSH AP's privateKeyFile and ingest.secretFile are written as given. */
const config = (privateKeyFile: string, secretFile: string) => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
accessPoints:
  - name: office-1
    zone: lobby
    dialect: openwrt-iw
    transport: ssh
    host: 10.0.0.7
    ssh:
      username: lintel
      hostKeySha256: "nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"
      privateKeyFile: ${privateKeyFile}
ingest: { url: "http://127.0.0.1:9/ingest", secretFile: ${secretFile} }
`;

/** A directory with real secret files, so only the value under test is wrong. */
function secretDir(t: Test): string {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'id_ed25519'), 'key\n', { mode: 0o600 });
  writeFileSync(join(dir, 'ingest.key'), 'signing\n', { mode: 0o600 });
  return dir;
}

/** Every run of 12 characters of `secret` that holds no space: what must appear in no error. */
const piecesOf = (secret: string) => secret.split(/\s+/).flatMap((word) => (word.length >= 12 ? [word.slice(0, 12), word.slice(-12)] : []));

for (const [kind, pem] of [
  ['ed25519', generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' })],
  ['rsa', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' })],
] as const) {
  t.test(`a key (${kind}) pasted as a plain multi-line value is refused without being shown`, async (t) => {
    const lines = String(pem).trim().split('\n');
    const text = config(lines.join('\n        '), 'ingest.key');
    const folded = (parse(text) as { accessPoints: Array<{ ssh: { privateKeyFile: string } }> }).accessPoints[0]!.ssh.privateKeyFile;
    t.notMatch(folded, /[\r\n]/, 'YAML folds it onto one line');
    const result = parseConfig(text, join(secretDir(t), 'c.yaml'), { dialects });
    t.notOk(result.ok);
    if (result.ok) return;
    t.same(result.errors, [`accessPoints[0].ssh.privateKeyFile: expected a path to the file holding the secret, got a value holding "-----BEGIN" (a PEM key, pasted in place of its path?); ${NOT_SHOWN}`]);
    const all = result.errors.join('\n');
    const pieces = piecesOf(lines.slice(1, -1).join(' '));
    t.ok(pieces.length > 0);
    t.same(pieces.filter((piece) => all.includes(piece)), [], 'no piece of the key is shown');
  });
}

t.test('a value with a part longer than any file name is refused without being shown', async (t) => {
  const secret = `${'Zm9vYmFy'.repeat(40)}-marker`;
  const result = parseConfig(config('id_ed25519', secret), join(secretDir(t), 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.same(result.errors, [`ingest.secretFile: expected a path to the file holding the secret, got a value with a part longer than 255 bytes, which no file name is (the secret itself?); ${NOT_SHOWN}`]);
  t.notOk(result.errors.join('\n').includes('Zm9vYmFy'), 'the value is not shown');
});

t.test('a path the system refuses to look up is reported by the config path, never its value', async (t) => {
  // Every part fits a file name, so the codec takes it; the whole is past PATH_MAX: stat fails ENAMETOOLONG.
  const value = [...Array.from({ length: 20 }, (_, i) => `${String(i).padStart(3, '0')}${'q'.repeat(240)}`), 'marker'].join('/');
  const dir = secretDir(t);
  const result = parseConfig(config('id_ed25519', value), join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.same(result.errors, [
    `ingest.secretFile: cannot look at the file: its path is too long for the system (ENAMETOOLONG) (a relative path is read from ${dir}; the value is not shown, in case it is the secret itself)`,
  ]);
  t.notOk(result.errors.join('\n').includes('qqqq'), 'the value is not shown');
});
