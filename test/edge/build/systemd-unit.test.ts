/** The shipped systemd unit runs the collector hardened, with a bounded heap, and leaves V8's JIT alone. */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { heapLimitMbOf, unitDirectives, unitEnvironment } from './unit-file.js';

const run = promisify(execFile);
const directives = unitDirectives();
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

t.test('systemctl reload sends the collector SIGHUP, which re-reads its config', async (t) => {
  t.equal(value('ExecReload'), '/bin/kill -HUP $MAINPID');
});

t.test('it bounds the V8 heap through NODE_OPTIONS, well inside MemoryMax', async (t) => {
  const environment = unitEnvironment(directives);
  const nodeOptions = environment.NODE_OPTIONS;
  t.match(environment.MALLOC_ARENA_MAX ?? '', /^[1-4]$/, 'a few malloc arenas, not one per thread');
  t.type(nodeOptions, 'string', 'Environment= sets NODE_OPTIONS');
  const { oldSpaceMb, semiSpaceMb, heapLimitMb } = heapLimitMbOf(nodeOptions ?? '');
  t.ok(oldSpaceMb >= 32 && oldSpaceMb <= 128, `old space ${oldSpaceMb} MB`);
  t.ok(semiSpaceMb >= 1 && semiSpaceMb <= 16, `semi-space ${semiSpaceMb} MB`);
  const memoryMax = /^(\d+)M$/.exec(value('MemoryMax') ?? '');
  t.ok(memoryMax, 'MemoryMax in MB');
  t.ok(heapLimitMb * 2 <= Number(memoryMax?.[1]), `heap limit ${heapLimitMb} MB leaves room under MemoryMax for code, SQLite and buffers`);

  // Node accepts these flags from NODE_OPTIONS (not every V8 flag is allowed there) and they give that limit.
  const { stdout } = await run(process.execPath, ['-p', 'require("v8").getHeapStatistics().heap_size_limit / 1048576'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_OPTIONS: nodeOptions ?? '' },
  });
  t.equal(Number(stdout.trim()), heapLimitMb);
});
