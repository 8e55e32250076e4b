import t, { type Test } from 'tap';
import { createCipheriv, generateKeyPairSync } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, parseConfig, shippedDialects, type DialectInfo } from '../../../edge/src/config/index.js';

const SAMPLE = new URL('../../../edge/config.sample.yaml', import.meta.url);

const dialects = new Map<string, DialectInfo>([
  ['aruba-aos', { transport: 'snmp', namesApOfStation: true }],
  ['mikrotik', { transport: 'snmp' }],
  ['cisco-wlc', { transport: 'snmp', controller: true }],
  ['openwrt-iw', { transport: 'ssh' }],
]);

/** A directory holding the given secret files (mode 600). */
function secrets(t: Test, files: Record<string, string>): string {
  const dir = t.testdir({});
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content, { mode: 0o600 });
  }
  return dir;
}

const minimal = (extra = '') => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
accessPoints:
  - name: lobby-1
    zone: lobby
    dialect: aruba-aos
    transport: snmp
    host: 10.0.0.5
    snmp: { version: 2c, communityFile: community }
${extra}`;

t.test('the sample config parses with the shipped dialects', async (t) => {
  const dir = secrets(t, {
    'secrets/ingest.key': 'ingest-signing-key\n',
    'secrets/snmp-community': 'public\n',
    'secrets/snmp-auth': 'auth-pass-phrase\n',
    'secrets/snmp-priv': 'priv-pass-phrase\n',
    'secrets/ssh/id_ed25519': '-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n',
  });
  copyFileSync(SAMPLE, join(dir, 'config.yaml'));
  const result = loadConfig(join(dir, 'config.yaml'), { dialects: shippedDialects() });
  if (!result.ok) t.fail(result.errors.join('\n'));
  t.ok(result.ok);
  if (!result.ok) return;
  const { config } = result;
  t.equal(config.buildingId, 'hq-amsterdam');
  t.equal(config.pollIntervalMs, 10_000);
  t.equal(config.requestTimeoutMs, 5_000);
  t.same(config.zones, [{ id: 'lobby', devicesPerPerson: 1.6 }, { id: 'cafe', devicesPerPerson: 1.4 }, { id: 'office-2f' }, { id: 'meeting-rooms' }]);
  t.same(config.tracker, { switchPolls: 3, switchMarginDb: 8, frozenPolls: 30, absentPolls: 2, transitionWindowPolls: 30 });
  t.same(config.ingest, { url: 'https://telemetry.example.net/ingest', secret: 'ingest-signing-key', keyId: 'gw-hq-amsterdam', timeoutMs: 5000 });
  t.same(config.metrics, { host: '127.0.0.1', port: 9464 });
  t.equal(config.ledgerRetentionMs, 30 * 24 * 3_600_000);
  t.equal(config.accessPoints.length, 4);
  t.same(config.accessPoints[0]!.target, { transport: 'snmp', host: '10.20.0.11', port: 161, version: '2c', community: 'public' });
  t.same(config.accessPoints[1]!.target, {
    transport: 'snmp',
    host: '10.20.0.21',
    port: 161,
    version: '3',
    user: 'lintel',
    authProtocol: 'sha',
    authKey: 'auth-pass-phrase',
    privProtocol: 'aes',
    privKey: 'priv-pass-phrase',
  });
  t.same(config.accessPoints[2]!.apZones, { 'AP-Office-2F-North': 'office-2f', 'AP-Office-2F-South': 'office-2f', 'AP-Meeting-1': 'meeting-rooms' });
  t.same(config.sensors, [
    { sensorId: 'stat-lobby', buildingId: 'hq-amsterdam', roomId: 'lobby', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'http://10.20.1.40:8089' },
  ]);
  const ssh = config.accessPoints[3]!.target;
  t.equal(ssh.transport, 'ssh');
  if (ssh.transport === 'ssh') {
    t.equal(ssh.port, 22);
    t.match(ssh.privateKey, /BEGIN OPENSSH PRIVATE KEY/);
    t.equal(ssh.interface, 'phy0-ap0');
  }
});

t.test('every problem is reported at once, each with its path', async (t) => {
  const dir = secrets(t, {});
  const text = `
buildingId: ""
pollIntervalS: 5
requestTimeoutS: 8
zones:
  lobby:
    devicesPerPerson: 0
accessPoints:
  - name: a1
    zone: lobby
    dialect: aruba-aos
    transport: snmp
    host: 10.0.0.1
    snmp: { version: 1, communityFile: missing-file }
  - name: a1
    zone: kitchen
    dialect: fritzbox
    transport: ssh
    host: 10.0.0.2
    ssh: { username: root, privateKeyFile: key }
  - name: a3
    zone: lobby
    dialect: openwrt-iw
    transport: snmp
    host: ""
    colour: blue
`;
  const result = parseConfig(text, join(dir, 'config.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  const errors = result.errors;
  t.comment(errors.join('\n'));
  const expectLine = (pattern: RegExp | string) =>
    t.ok(
      errors.some((e) => (typeof pattern === 'string' ? e === pattern : pattern.test(e))),
      `reports ${String(pattern)}`,
    );
  expectLine('accessPoints[2].host: expected a hostname, got ""');
  expectLine(/^buildingId: expected a name/);
  expectLine(/^requestTimeoutS: expected at most pollIntervalS \(5\), got 8/);
  expectLine(/^zones\.lobby\.devicesPerPerson: expected a number of devices per person, 1 or more/);
  expectLine(/^accessPoints\[0\]\.snmp\.version: expected an SNMP version: 2c or 3, got 1$/);
  expectLine(/^accessPoints\[0\]\.snmp\.communityFile: no such file \(a relative path is read from .+; the value is not shown, in case it is the secret itself\)$/);
  expectLine(/^accessPoints\[1\]\.name: "a1" is already used by accessPoints\[0\]/);
  expectLine(/^accessPoints\[1\]\.dialect: expected one of aruba-aos, cisco-wlc, mikrotik, openwrt-iw, got "fritzbox"$/);
  expectLine(/^accessPoints\[1\]\.zone: "kitchen" is not a zone declared under zones/);
  expectLine(/^accessPoints\[1\]\.ssh\.privateKeyFile: no such file/);
  expectLine(/^accessPoints\[2\]\.transport: the openwrt-iw dialect is read over ssh, got snmp$/);
  expectLine(/^accessPoints\[2\]\.snmp: required for transport snmp/);
  expectLine(/^accessPoints\[2\]\.colour: unknown key; expected one of name, host, dialect, transport, zone/);
  t.ok(errors.length >= 13);
});

t.test('requestTimeoutS may equal pollIntervalS but not exceed it', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const equal = parseConfig(minimal().replace('requestTimeoutS: 5', 'requestTimeoutS: 10'), join(dir, 'c.yaml'), { dialects });
  t.ok(equal.ok);
  const over = parseConfig(minimal().replace('requestTimeoutS: 5', 'requestTimeoutS: 10.5'), join(dir, 'c.yaml'), { dialects });
  t.notOk(over.ok);
  if (!over.ok) t.match(over.errors, [/^requestTimeoutS: expected at most pollIntervalS \(10\), got 10\.5/]);
});

t.test('an inline secret is refused without echoing it', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const text = minimal().replace('snmp: { version: 2c, communityFile: community }', 'snmp: { version: 2c, community: s3cr3t-community }');
  const result = parseConfig(`${text}\ningest: { url: "http://127.0.0.1:1/ingest", secret: hunter2-signing }\n`, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.ok(result.errors.includes('accessPoints[0].snmp.community: inline secrets are not accepted; put the value in a file (mode 600) and set communityFile to its path'));
  t.ok(result.errors.some((e) => e.startsWith('ingest.secret: inline secrets are not accepted')));
  t.ok(result.errors.some((e) => e.startsWith('ingest.secretFile: required') || /ingest\.secretFile: expected a file path, got nothing/.test(e)));
  t.notOk(result.errors.join('\n').includes('s3cr3t'), 'the community is not echoed');
  t.notOk(result.errors.join('\n').includes('hunter2'), 'the signing secret is not echoed');
});

t.test('a secret written where its file path belongs is not echoed: a single line naming no file, a number', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const text = minimal().replace('communityFile: community', 'communityFile: "Xk3-community-9q"');
  const result = parseConfig(`${text}\ningest: { url: "http://127.0.0.1:1/ingest", secretFile: 827361 }\n`, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.ok(result.errors.some((e) => e.startsWith('accessPoints[0].snmp.communityFile: no such file (a relative path is read from ')), result.errors.join('\n'));
  t.ok(result.errors.includes("ingest.secretFile: expected a path to the file holding the secret, got a number; it is not shown. Put the secret in a file (mode 600) and give that file's path"), result.errors.join('\n'));
  t.notOk(result.errors.join('\n').includes('Xk3'), 'the community is not echoed');
  t.notOk(result.errors.join('\n').includes('827361'), 'the signing secret is not echoed');
});

t.test('ssh.interface is checked with the rest of the file, by its key path: plain names, comma-separated', async (t) => {
  const dir = secrets(t, { community: 'public', 'ssh.key': 'key\n' });
  const withInterface = (value: string) => `${minimal().replace('host: 10.0.0.5', 'host: 10.0.0.5:99')}
  - name: owrt
    zone: lobby
    dialect: openwrt-iw
    transport: ssh
    host: 10.0.0.6
    ssh: { username: root, privateKeyFile: ssh.key, interface: ${JSON.stringify(value)} }
`;
  for (const bad of ['wlan0; reboot', 'phy0-ap0,$(id)', ' , ', 'a'.repeat(33)]) {
    const result = parseConfig(withInterface(bad), join(dir, 'c.yaml'), { dialects });
    t.notOk(result.ok, bad);
    if (result.ok) continue;
    t.ok(result.errors.some((e) => e.startsWith('accessPoints[1].ssh.interface: expected interface names, comma-separated, each of 1 to 32 letters, digits, _ . @ or -, got ')), `${bad}: ${result.errors.join(' | ')}`);
    t.ok(result.errors.some((e) => e.startsWith('accessPoints[0].host: expected a hostname')), 'reported in the same round as the other problems');
  }
  const good = parseConfig(withInterface('phy0-ap0, phy1-ap0').replace('host: 10.0.0.5:99', 'host: 10.0.0.5'), join(dir, 'c.yaml'), { dialects });
  if (!good.ok) t.fail(good.errors.join('\n'));
  if (good.ok) t.match(good.config.accessPoints[1]!.target, { transport: 'ssh', interface: 'phy0-ap0, phy1-ap0' });
});

t.test('secrets are read from files relative to the config, trailing newline dropped', async (t) => {
  const dir = secrets(t, { community: 'public\n', 'keys/ingest': 'k3y\n' });
  const result = parseConfig(minimal('ingest: { url: "http://127.0.0.1:9/ingest", secretFile: keys/ingest }'), join(dir, 'c.yaml'), { dialects });
  t.ok(result.ok);
  if (!result.ok) return;
  t.equal(result.config.ingest?.secret, 'k3y');
  t.equal(result.config.ingest?.timeoutMs, 5000);
  t.same(result.warnings, []);
  t.equal(result.config.accessPoints[0]!.target.transport === 'snmp' && result.config.accessPoints[0]!.target.community, 'public');
});

t.test('ingest.keyId takes the ids telemetry issues (shared/hmac.ts KEY_ID), and only those', async (t) => {
  const dir = secrets(t, { community: 'public\n', 'keys/ingest': 'k3y\n' });
  const withKeyId = (keyId: string) =>
    parseConfig(minimal(`ingest: { url: "http://127.0.0.1:9/ingest", secretFile: keys/ingest, keyId: ${JSON.stringify(keyId)} }`), join(dir, 'c.yaml'), { dialects });
  for (const keyId of ['gw-hq', 'site:ams.floor_2', 'a', 'k'.repeat(128)]) {
    const result = withKeyId(keyId);
    t.equal(result.ok && result.config.ingest?.keyId, keyId, `${keyId.slice(0, 20)} is accepted`);
  }
  for (const keyId of ['gw hq', 'gw/hq', 'k'.repeat(129), 'gw\u00e9']) {
    const result = withKeyId(keyId);
    t.notOk(result.ok, `${JSON.stringify(keyId.slice(0, 20))} is refused`);
    if (!result.ok) t.match(result.errors.join('\n'), /ingest\.keyId: expected a key id of 1 to 128 letters, digits, dots, underscores, colons or dashes/);
  }
});

t.test('a secret file others can read is a warning', async (t) => {
  const dir = secrets(t, { community: 'public' });
  chmodSync(join(dir, 'community'), 0o644);
  const result = parseConfig(minimal(), join(dir, 'c.yaml'), { dialects });
  t.ok(result.ok);
  if (result.ok) t.match(result.warnings, [/accessPoints\[0\]\.snmp\.communityFile: .* is open to others \(mode 644\); chmod 600 or 640 it/]);
});

t.test('a controller maps its APs to declared zones', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const controller = `
  - name: wlc
    dialect: cisco-wlc
    transport: snmp
    host: wlc.example.net
    snmp: { version: 2c, communityFile: community }
`;
  const missing = parseConfig(minimal(controller), join(dir, 'c.yaml'), { dialects });
  t.notOk(missing.ok);
  if (!missing.ok) t.match(missing.errors, [/^accessPoints\[1\]\.apZones: the cisco-wlc dialect is a controller; map each AP behind it to a zone$/]);
  const wrongZone = parseConfig(minimal(`${controller}    apZones: { AP-1: lobby, AP-2: roof }\n`), join(dir, 'c.yaml'), { dialects });
  t.notOk(wrongZone.ok);
  if (!wrongZone.ok) t.match(wrongZone.errors, [/^accessPoints\[1\]\.apZones\.AP-2: "roof" is not a zone declared under zones/]);
  const good = parseConfig(minimal(`${controller}    apZones: { AP-1: lobby }\n`), join(dir, 'c.yaml'), { dialects });
  t.ok(good.ok);
  const byMac = parseConfig(minimal(`${controller}    apZones: { "00:11:22:33:44:55": lobby }\n`), join(dir, 'c.yaml'), { dialects });
  t.notOk(byMac.ok, 'an AP keyed by MAC must be given a name for reports');
  if (!byMac.ok) t.match(byMac.errors, [/^accessPoints\[1\]\.apZones\.00:11:22:33:44:55: an AP keyed by MAC needs a name/]);
  const named = parseConfig(minimal(`${controller}    apZones: { "00:11:22:33:44:55": { zone: lobby, name: lobby-ceiling } }\n`), join(dir, 'c.yaml'), { dialects });
  t.ok(named.ok);
  if (named.ok) {
    t.same(named.config.accessPoints[1]!.apZones, { '00:11:22:33:44:55': 'lobby' });
    t.same(named.config.reportNames, { 'lobby-1': 'lobby-1', '00:11:22:33:44:55': 'lobby-ceiling' });
  }
  const clash = parseConfig(minimal(`${controller}    apZones: { lobby-1: lobby }\n`), join(dir, 'c.yaml'), { dialects });
  t.notOk(clash.ok);
  if (!clash.ok) t.match(clash.errors, [/^accessPoints\[1\]\.apZones\.lobby-1: "lobby-1" is already used by accessPoints\[0\]/]);
  const plain = parseConfig(minimal().replace('dialect: aruba-aos', 'dialect: mikrotik').replace('    zone: lobby\n', '    zone: lobby\n    apZones: { x: lobby }\n'), join(dir, 'c.yaml'), { dialects });
  t.notOk(plain.ok);
  if (!plain.ok) t.match(plain.errors, [/^accessPoints\[0\]\.apZones: the mikrotik dialect does not say which AP carries a station, so its stations cannot be split per AP; set zone instead$/]);
});

t.test('a dialect whose rows name the AP of each station (aruba-aos, by BSSID) may be split per AP with apZones', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const split = minimal().replace('    zone: lobby\n', '    apZones:\n      "24:de:c6:a0:01:10": { zone: lobby, name: lobby-east }\n      "24:de:c6:a0:02:00": { zone: cafe, name: cafe-west }\n').replace('  lobby:\n', '  lobby:\n  cafe:\n');
  const result = parseConfig(split, join(dir, 'c.yaml'), { dialects });
  if (!result.ok) t.fail(result.errors.join('\n'));
  if (result.ok) {
    t.same(result.config.accessPoints[0]!.apZones, { '24:de:c6:a0:01:10': 'lobby', '24:de:c6:a0:02:00': 'cafe' });
    t.same(result.config.reportNames, { '24:de:c6:a0:01:10': 'lobby-east', '24:de:c6:a0:02:00': 'cafe-west' }, 'apClients are reported per AP radio, by name');
  }
  const empty = parseConfig(minimal().replace('    zone: lobby\n', '    apZones: {}\n'), join(dir, 'c.yaml'), { dialects });
  t.notOk(empty.ok);
  if (!empty.ok) t.match(empty.errors, [/^accessPoints\[0\]\.apZones: empty; map each AP \(radio\) to a zone, or remove apZones and set zone$/]);
  const neither = parseConfig(minimal().replace('    zone: lobby\n', ''), join(dir, 'c.yaml'), { dialects });
  t.notOk(neither.ok);
  if (!neither.ok) t.match(neither.errors, [/^accessPoints\[0\]\.zone: required \(the zone this AP covers\)$/]);
  const shipped = shippedDialects();
  t.equal(shipped.get('aruba-aos')?.namesApOfStation, true, 'the shipped aruba-aos dialect names the BSSID of each station');
  t.equal(shipped.get('mikrotik')?.namesApOfStation, false);
});

t.test('names that look like identifiers are refused (the audit would flag them), saying what they look like', async (t) => {
  const dir = secrets(t, { community: 'public' });
  for (const [name, found] of [
    ['00-11-22-33-44-55', 'a MAC'],
    ['10.20.0.11', 'an IP address'],
    ['printer.local', 'a local host name'],
    ['lobby.lan', 'a local host name'],
    ['0123456789abcdef0123', 'a hash \\(long hex\\)'],
  ] as const) {
    const result = parseConfig(minimal().replace('name: lobby-1', `name: ${name}`), join(dir, 'c.yaml'), { dialects });
    t.notOk(result.ok, name);
    if (!result.ok) {
      t.match(
        result.errors,
        [new RegExp(`^accessPoints\\[0\\]\\.name: expected a name .* that does not look like an identifier \\(a MAC, UUID, hash, base64, IP address or local host name\\), got "${name}": it looks like ${found}$`)],
        name,
      );
    }
  }
});

t.test('YAML syntax errors name the line', async (t) => {
  const result = parseConfig('buildingId: hq\nzones: [lobby\n', '/nowhere/c.yaml', { dialects });
  t.notOk(result.ok);
  if (!result.ok) t.match(result.errors[0], /^line \d+, column \d+: /);
});

t.test('--frozen-polls overrides tracker.frozenPolls; the window is in polls', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const result = parseConfig(minimal('tracker: { frozenPolls: 12, transitionWindowS: 95 }'), join(dir, 'c.yaml'), { dialects, frozenPolls: 4 });
  t.ok(result.ok);
  if (!result.ok) return;
  t.equal(result.config.tracker.frozenPolls, 4);
  t.equal(result.config.tracker.transitionWindowPolls, 10);
  const bad = parseConfig(minimal(), join(dir, 'c.yaml'), { dialects, frozenPolls: 0 });
  t.notOk(bad.ok);
});

t.test('a renamed key points to its replacement', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const result = parseConfig(minimal('pollInterval: 10'), join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (!result.ok) t.ok(result.errors.includes('pollInterval: renamed to pollIntervalS (seconds)'));
});

t.test('sensors name a declared zone and a metric with actions, once each', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const sensors = `sensors:
  - { sensorId: s1, zone: lobby, metric: temperature, driver: x, endpoint: "http://127.0.0.1:1" }
  - { sensorId: s1, zone: attic, metric: peopleCount, driver: x, endpoint: "ftp://x" }
`;
  const result = parseConfig(minimal(sensors), join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.match(result.errors.join('\n'), /sensors\[1\]\.endpoint: expected an http:\/\/ or https:\/\/ URL/);
  t.match(result.errors.join('\n'), /sensors\[1\]\.sensorId: "s1" is already used by sensors\[0\]/);
  t.match(result.errors.join('\n'), /sensors\[1\]\.zone: "attic" is not a zone declared under zones/);
  t.match(result.errors.join('\n'), /sensors\[1\]\.metric: peopleCount declares no actions/);
});

t.test('a missing config file is one clear error', async (t) => {
  const result = loadConfig('/nonexistent/lintel.yaml', { dialects });
  t.notOk(result.ok);
  if (!result.ok) t.same(result.errors, ['/nonexistent/lintel.yaml: cannot read the config file (ENOENT)']);
});

t.test('a zone id that cannot be sent as a roomId is an error, not silently dropped', async (t) => {
  const dir = secrets(t, { community: 'public' });
  const text = minimal().replace('zones:\n  lobby:\n', 'zones:\n  lobby:\n  "3c:22:fb:01:02:03":\n  "east/wing": { devicesPerPerson: 2 }\n');
  const result = parseConfig(text, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok, 'the config is refused');
  if (result.ok) return;
  t.match(result.errors, [/^zones\.3c:22:fb:01:02:03: not accepted as a key; it looks like a MAC; expected a name .* does not look like an identifier \(a MAC, UUID, hash, base64, IP address or local host name\)$/, /^zones\.east\/wing: not accepted as a key; expected a name/]);
  t.equal(result.errors.length, 2);
});

t.test('a secret pasted where its file path belongs is refused without being echoed', async (t) => {
  const dir = secrets(t, { community: 'public' });
  // A real key, made for this test only, pasted as an operator might.
  const pem = String(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' })).trim();
  const keyBody = pem.split('\n')[1] ?? '';
  const text = `${minimal()}
  - name: owrt
    zone: lobby
    dialect: openwrt-iw
    transport: ssh
    host: 10.0.0.6
    ssh:
      username: root
      privateKeyFile: |
        ${pem.replaceAll('\n', '\n        ')}
ingest: { url: "http://127.0.0.1:9/ingest", secretFile: "hunter2\\nsigning" }
`;
  const result = parseConfig(text, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.ok(result.errors.includes("accessPoints[1].ssh.privateKeyFile: expected a path to the file holding the secret, got a multi-line value (the secret itself?); it is not shown. Put the secret in a file (mode 600) and give that file's path"));
  t.ok(result.errors.some((e) => /^ingest\.secretFile: expected a path to the file holding the secret, got a multi-line value/.test(e)));
  const all = result.errors.join('\n');
  t.ok(keyBody.length > 20);
  t.notOk(all.includes(keyBody.slice(0, 20)), 'the key is not echoed');
  t.notOk(all.includes('hunter2'), 'the signing secret is not echoed');
});

t.test('SNMPv3 privProtocol without privKeyFile, and an empty SSH username, are refused at start', async (t) => {
  const dir = secrets(t, { community: 'public', auth: 'auth-pass', key: 'k' });
  const text = minimal()
    .replace('snmp: { version: 2c, communityFile: community }', 'snmp: { version: 3, user: lintel, authKeyFile: auth, privProtocol: aes }')
    .concat('  - { name: owrt, zone: lobby, dialect: openwrt-iw, transport: ssh, host: 10.0.0.6, ssh: { username: "", privateKeyFile: key } }\n');
  const result = parseConfig(text, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.same(result.errors.sort(), [
    'accessPoints[0].snmp.privKeyFile: required when privProtocol is set (authPriv); or remove privProtocol',
    'accessPoints[1].ssh.username: expected a non-empty string, got ""',
  ]);
});

t.test('a URL with a user or password in it is refused for that reason, without echoing it', async (t) => {
  const dir = secrets(t, { community: 'public', 'keys/ingest': 'k3y' });
  const text = minimal(`ingest: { url: "https://gw:hunter2@telemetry.example.net/ingest", secretFile: keys/ingest }
sensors:
  - { sensorId: s1, zone: lobby, metric: temperature, driver: x, endpoint: "http://admin:pa55word@10.20.1.40:8089" }
`);
  const result = parseConfig(text, join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (result.ok) return;
  t.match(result.errors, [/^ingest\.url: .*user or password/, /^sensors\[0\]\.endpoint: .*user or password/]);
  const all = result.errors.join('\n');
  t.notOk(all.includes('hunter2'), 'the ingest password is not echoed');
  t.notOk(all.includes('pa55word'), 'the device password is not echoed');
});

t.test('a YAML alias bomb is a configuration error with its cause, not a crash', async (t) => {
  const dir = secrets(t, { community: 'public' });
  // Each level repeats the one before nine times: 9^6 values from a few hundred bytes.
  const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
  for (const [prev, name] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e'], ['e', 'f']] as const) {
    levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
  }
  const result = parseConfig(minimal(`${levels.join('\n')}\n`), join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok);
  if (!result.ok) t.same(result.errors, ['YAML: too many alias expansions (more than 100); write the values out instead of repeating aliases']);
  const unresolved = parseConfig(minimal('tracker: *nowhere\n'), join(dir, 'c.yaml'), { dialects });
  t.notOk(unresolved.ok);
  if (!unresolved.ok) t.same(unresolved.errors, ['YAML: Unresolved alias (the anchor must be set before the alias): nowhere']);
});

t.test('a poll interval or timeout a timer cannot keep is refused, not run as 0 ms or overflowed', async (t) => {
  const dir = secrets(t, { community: 'public', 'keys/ingest': 'k3y' });
  const tiny = parseConfig(
    minimal('ingest: { url: "http://127.0.0.1:9/ingest", secretFile: keys/ingest, timeoutS: 0.0001 }').replace('requestTimeoutS: 5', 'requestTimeoutS: 0.0004'),
    join(dir, 'c.yaml'),
    { dialects },
  );
  t.notOk(tiny.ok, 'a value that rounds to 0 ms');
  if (!tiny.ok) {
    t.match(tiny.errors, [/^requestTimeoutS: expected a number of seconds from 0\.001 to 2147483, got 0\.0004$/, /^ingest\.timeoutS: expected a number of seconds from 0\.001 to 2147483, got 0\.0001$/]);
  }
  // Node's timers fire after 1 ms for anything past 2^31-1 ms: every poll would time out at once.
  const huge = parseConfig(minimal().replace('pollIntervalS: 10', 'pollIntervalS: 3000000').replace('requestTimeoutS: 5', 'requestTimeoutS: 2500000'), join(dir, 'c.yaml'), { dialects });
  t.notOk(huge.ok, 'a value past the timer range');
  if (!huge.ok) {
    t.same(huge.errors, [
      'pollIntervalS: expected a number of seconds from 0.001 to 2147483, got 3000000',
      'requestTimeoutS: expected a number of seconds from 0.001 to 2147483, got 2500000',
    ]);
  }
});

t.test('an SSH AP without a pinned host key is a warning that says any host key is accepted', async (t) => {
  const dir = secrets(t, { community: 'public', key: 'k' });
  const ssh = (extra: string) => `  - { name: owrt, zone: lobby, dialect: openwrt-iw, transport: ssh, host: 10.0.0.6, ssh: { username: root, privateKeyFile: key${extra} } }\n`;
  const unpinned = parseConfig(minimal(ssh('')), join(dir, 'c.yaml'), { dialects });
  t.ok(unpinned.ok);
  if (unpinned.ok) {
    t.same(unpinned.warnings, [
      'accessPoints[1].ssh.hostKeySha256: not set, so any host key this AP presents is accepted; pin it (ssh-keygen -l -E sha256 -f <the AP host key .pub>)',
    ]);
  }
  const pinned = parseConfig(minimal(ssh(', hostKeySha256: "nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"')), join(dir, 'c.yaml'), { dialects });
  t.ok(pinned.ok);
  if (pinned.ok) t.same(pinned.warnings, []);
});

t.test('SNMPv3 privProtocol des is refused at start when this runtime cannot encrypt with DES', async (t) => {
  const dir = secrets(t, { auth: 'auth-pass-123', priv: 'priv-pass-456' });
  const text = minimal().replace(
    'snmp: { version: 2c, communityFile: community }',
    'snmp: { version: 3, user: lintel, authKeyFile: auth, privProtocol: des, privKeyFile: priv }',
  );
  // net-snmp encrypts DES with node:crypto's des-cbc; Node on OpenSSL 3 has it only with the legacy provider.
  let desWorks = true;
  try {
    createCipheriv('des-cbc', Buffer.alloc(8), Buffer.alloc(8));
  } catch {
    desWorks = false;
  }
  const result = parseConfig(text, join(dir, 'c.yaml'), { dialects });
  if (desWorks) {
    t.ok(result.ok, 'DES works here, so it is accepted');
    return;
  }
  t.notOk(result.ok);
  if (!result.ok) {
    t.same(result.errors, [
      'accessPoints[0].snmp.privProtocol: des is not available in this runtime (OpenSSL 3 dropped DES to its legacy provider), so every poll would fail; set the AP to AES and use privProtocol: aes',
    ]);
  }
});
