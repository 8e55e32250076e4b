/** The shipped systemd unit runs the collector hardened, and leaves V8's JIT alone. */
import t from 'tap';
import { readFileSync } from 'node:fs';

const unit = readFileSync(new URL('../../../edge/systemd/lintel-edge.service', import.meta.url), 'utf8');
const directives = new Map<string, string[]>();
for (const line of unit.split('\n')) {
  const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
  if (m) directives.set(m[1]!, [...(directives.get(m[1]!) ?? []), m[2]!]);
}
const value = (key: string) => directives.get(key)?.at(-1);

t.test('hardening directives', async (t) => {
  t.ok(value('DynamicUser') === 'yes' || (value('User') !== undefined && value('User') !== 'root'), 'a dynamic or dedicated user');
  t.equal(value('ProtectSystem'), 'strict');
  t.equal(value('NoNewPrivileges'), 'yes');
  t.equal(value('RestrictAddressFamilies'), 'AF_INET AF_INET6 AF_UNIX');
  t.equal(value('CapabilityBoundingSet'), '', 'no capabilities');
  t.equal(value('PrivateTmp'), 'yes');
  t.equal(value('ProtectHome'), 'yes');
  t.equal(value('StateDirectory'), 'lintel-edge');
  t.equal(directives.has('MemoryDenyWriteExecute'), false, 'V8 needs W^X off: MemoryDenyWriteExecute is not set');
});

t.test('it runs the collector with the config from /etc', async (t) => {
  t.equal(value('ExecStart'), '/usr/local/bin/lintel-edge run --config /etc/lintel-edge/config.yaml');
  t.equal(value('WantedBy'), 'multi-user.target');
});
