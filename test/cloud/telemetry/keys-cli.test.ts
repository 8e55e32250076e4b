/**
 * keys-cli: a new key must name its buildings, bad lists are refused with every problem at once, and
 * keys that may write any building (made before keys named buildings) are pointed out until bound.
 */
import t from 'tap';
import { parseKeysCommand, runKeysCommand, type KeysCommand } from '../../../cloud/telemetry/keys-command.js';
import { PgBuildingStore } from '../../../cloud/telemetry/store/buildings.js';
import { PgIngestKeyStore } from '../../../cloud/telemetry/store/ingest-keys.js';
import { migratedPool } from './support/database.js';
import { runScript } from './support/process.js';

t.test('the command line: buildings are required for add and bind, checked, and refused elsewhere', async (t) => {
  t.same(parseKeysCommand(['add', 'gw-lisbon-01', '--building', 'b-lisbon', '-b', 'b-annex', 'Lisbon HQ']), {
    ok: true,
    command: { name: 'add', keyId: 'gw-lisbon-01', buildingIds: ['b-lisbon', 'b-annex'], note: 'Lisbon HQ' },
  });
  t.same(parseKeysCommand(['bind', 'gw-1', '--building=b1']), { ok: true, command: { name: 'bind', keyId: 'gw-1', buildingIds: ['b1'] } });
  t.same(parseKeysCommand(['revoke', 'gw-1']), { ok: true, command: { name: 'revoke', keyId: 'gw-1' } });
  t.same(parseKeysCommand(['list']), { ok: true, command: { name: 'list' } });

  const refusals: Array<[string[], string[]]> = [
    [['add', 'gw-1', 'Lisbon HQ'], ['--building: a new key must name the buildings the key may write, once per building (--building <buildingId>)']],
    [['bind', 'gw-1'], ['--building: bind must name the buildings the key may write, once per building (--building <buildingId>)']],
    [
      ['add', 'gw 1', '--building', 'b1', '--building', '', '--building', 'b1 ', '--building', 'b1'],
      [
        'keyId: a key id is 1 to 128 of letters, digits, ".", "_", ":" and "-", got "gw 1"',
        '--building[1]: expected a building id, got an empty string',
        '--building[2]: "b1 " has surrounding whitespace; building ids are matched exactly',
        '--building[3]: "b1" is already named at --building[0]',
      ],
    ],
    [['add', 'gw-1', '--building', 'b1', 'Lisbon', 'HQ'], ['add: unexpected argument "HQ" (quote a note of several words)']],
    [['revoke', 'gw-1', '--building', 'b1'], ['--building: only add and bind take buildings']],
    [['list', '--building', 'b1'], ['--building: only add and bind take buildings']],
    [['revoke'], ['revoke: expected a key id']],
    [[], ['expected a command: add, bind, revoke or list']],
    [['remove', 'gw-1'], ['unknown command "remove"; expected add, bind, revoke or list']],
  ];
  for (const [argv, problems] of refusals) t.same(parseKeysCommand(argv), { ok: false, problems }, argv.join(' '));
  const unknownOption = parseKeysCommand(['add', 'gw-1', '--buildings', 'b1']);
  t.match(unknownOption, { ok: false, problems: [/Unknown option '--buildings'/] });
  t.match(parseKeysCommand(['add', 'gw-1', '--building']), { ok: false, problems: [/--building/] }, 'an option without its value');
});

t.test('the commands against PostgreSQL: add, list, bind and revoke round-trip the buildings', async (t) => {
  const pool = await migratedPool(t);
  const keys = new PgIngestKeyStore(pool);
  const buildings = new PgBuildingStore(pool);
  await buildings.applyRegistration({ buildingId: 'b1', rooms: [], sensors: [], thresholds: [] });
  const run = async (command: KeysCommand) => {
    let out = '';
    let err = '';
    const code = await runKeysCommand(command, { keys, buildings, out: (text) => (out += text), err: (text) => (err += text) });
    return { code, out, err };
  };

  const added = await run({ name: 'add', keyId: 'gw-1', buildingIds: ['b1', 'b9'], note: 'Lisbon HQ' });
  t.equal(added.code, 0);
  t.match(added.out, /^key id: gw-1\nsecret: [0-9a-f]{64}\nbuildings: b1,b9\n$/);
  t.match(added.err, /it is not shown again/);
  t.match(added.err, /warning: building "b9" has not been registered with telemetry yet/, 'a building no registration named is pointed out');
  t.notMatch(added.err, /"b1"/, 'a registered one is not');
  t.same((await keys.activeKey('gw-1'))?.buildingIds, ['b1', 'b9']);

  const again = await run({ name: 'add', keyId: 'gw-1', buildingIds: ['b1'] });
  t.same([again.code, again.err], [1, 'key gw-1 already exists and is active; revoke it first or pick another id\n']);

  await pool.query("INSERT INTO ingest_keys (key_id, secret, building_ids) VALUES ('gw-old', 'old-gateway-secret-0123', NULL)");
  const listed = await run({ name: 'list' });
  t.equal(listed.code, 0);
  t.match(listed.out, /^gw-1\tactive\t\S+\tLisbon HQ\tb1,b9\ngw-old\tactive\t\S+\t\tany building \(unbound\)\n$/);
  t.match(listed.err, /^warning: 1 active key\(s\) may write any building, as every key could before keys named buildings: gw-old\nConfine each to its gateway's buildings: keys-cli\.ts bind <keyId> --building <buildingId>/);
  t.notMatch(listed.out + listed.err, /old-gateway-secret/, 'never a secret');

  const bound = await run({ name: 'bind', keyId: 'gw-old', buildingIds: ['b1'] });
  t.same([bound.code, bound.out, bound.err], [0, 'gw-old may write: b1 (a running service applies it within 30 s)\n', '']);
  const quiet = await run({ name: 'list' });
  t.equal(quiet.err, '', 'no warning once every key names its buildings');
  t.match(quiet.out, /^gw-old\tactive\t\S+\t\tb1$/m);

  t.same(await run({ name: 'bind', keyId: 'gw-none', buildingIds: ['b1'] }), { code: 1, out: '', err: 'no active key gw-none\n' });
  t.equal((await run({ name: 'revoke', keyId: 'gw-1' })).code, 0);
  t.match((await run({ name: 'list' })).out, /^gw-1\trevoked \S+\t\S+\tLisbon HQ\tb1,b9$/m);
  t.same(await run({ name: 'revoke', keyId: 'gw-1' }), { code: 1, out: '', err: 'no active key gw-1\n' });
});

t.test('keys-cli.ts refuses a bad command line with exit 64 before it needs a database', async (t) => {
  const proc = runScript('cloud/telemetry/keys-cli.ts', ['add', 'gw-1', '--building', ' b1'], {});
  t.equal(await proc.exited, 64);
  t.match(proc.err(), /^--building\[0\]: " b1" has surrounding whitespace; building ids are matched exactly\nusage: keys-cli\.ts add <keyId> --building/);
  t.equal(proc.out(), '');
});
