/**
 * A secret file that holds only a newline or whitespace holds no secret: the ingest would sign every
 * batch with an empty key and each would be refused, an SNMP agent would not answer, an SSH key would not
 * parse. Every secret file the config reads is refused at start for it, naming the file, never its content.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, shippedDialects } from '../../../edge/src/config/index.js';

const dialects = shippedDialects();

const config = `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
accessPoints:
  - { name: lobby-1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: community } }
  - name: cafe-1
    zone: lobby
    dialect: mikrotik
    transport: snmp
    host: 10.0.0.6
    snmp: { version: 3, user: lintel, authKeyFile: auth, privProtocol: aes, privKeyFile: priv }
  - name: office-1
    zone: lobby
    dialect: openwrt-iw
    transport: ssh
    host: 10.0.0.7
    ssh: { username: lintel, privateKeyFile: id_ed25519, hostKeySha256: "nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8" }
ingest: { url: "http://127.0.0.1:9/ingest", secretFile: ingest.key }
`;

const SECRET_FILES: Array<[string, string]> = [
  ['accessPoints[0].snmp.communityFile', 'community'],
  ['accessPoints[1].snmp.authKeyFile', 'auth'],
  ['accessPoints[1].snmp.privKeyFile', 'priv'],
  ['accessPoints[2].ssh.privateKeyFile', 'id_ed25519'],
  ['ingest.secretFile', 'ingest.key'],
];

/** A directory holding every secret file of `config`, each with `content` (mode 600). */
function secretDir(dir: string, content: (file: string) => string): string {
  for (const [, file] of SECRET_FILES) writeFileSync(join(dir, file), content(file), { mode: 0o600 });
  return dir;
}

t.test('secret files holding something load, the trailing newline dropped', async (t) => {
  const dir = secretDir(t.testdir({}), (file) => `${file}-s3cr3t\n`);
  const result = parseConfig(config, join(dir, 'c.yaml'), { dialects });
  t.ok(result.ok, result.ok ? 'loads' : result.errors.join('\n'));
  if (result.ok) t.equal(result.config.ingest?.secret, 'ingest.key-s3cr3t');
});

for (const [what, blank] of [
  ['only a newline', '\n'],
  ['only spaces, tabs and CRLFs', ' \t\r\n  \r\n'],
  ['nothing', ''],
] as const) {
  t.test(`every kind of secret file holding ${what} is refused, naming the file`, async (t) => {
    const dir = secretDir(t.testdir({}), () => blank);
    const result = parseConfig(config, join(dir, 'c.yaml'), { dialects });
    t.notOk(result.ok, 'the config is refused');
    if (result.ok) return;
    t.same([...result.errors].sort(), SECRET_FILES.map(([at, file]) => `${at}: ${join(dir, file)} holds no secret`).sort());
  });
}

for (const [at, blankFile] of SECRET_FILES) {
  t.test(`${at} holding only whitespace is refused on its own, the other files holding their secret`, async (t) => {
    const dir = secretDir(t.testdir({}), (file) => (file === blankFile ? '  \n' : `${file}-s3cr3t\n`));
    const result = parseConfig(config, join(dir, 'c.yaml'), { dialects });
    t.notOk(result.ok, 'the config is refused');
    if (!result.ok) t.same(result.errors, [`${at}: ${join(dir, blankFile)} holds no secret`]);
  });
}
