import t from 'tap';
import { DEFAULT_CHANNELS, routeBrokerMessage, telemetryPattern } from '../../../cloud/relay/routing.js';
import { buildingRoom, domainRoom, holdsAnyDomain, isValidBuildingId } from '../../../cloud/relay/rooms.js';
import { readRelayConfig } from '../../../cloud/relay/config.js';
import { ConfigError } from '../../../shared/env.js';

const base = { id: 'n1', kind: 'alert', severity: 'danger', title: 't', message: 'm', buildingId: 'b1', createdAt: '2026-01-01T00:00:00Z' };

t.test('a notification with domainName is scoped to its room; without one it is a broadcast', async (t) => {
  t.same(routeBrokerMessage('notifications', JSON.stringify({ ...base, domainName: 'acme' }), DEFAULT_CHANNELS), {
    kind: 'notification',
    scope: 'domain',
    room: 'domain:acme',
    payload: { ...base, domainName: 'acme' },
  });
  t.same(routeBrokerMessage('notifications', JSON.stringify(base), DEFAULT_CHANNELS), { kind: 'notification', scope: 'broadcast', payload: base });
});

t.test('a notification that is not the schema is skipped, never broadcast', async (t) => {
  for (const payload of [
    JSON.stringify({ ...base, domain: 'acme' }),
    JSON.stringify({ ...base, DomainName: 'acme' }),
    JSON.stringify({ ...base, domainName: 7 }),
    JSON.stringify({ ...base, domainName: null }),
    JSON.stringify({ ...base, domainName: '' }),
    JSON.stringify({ ...base, kind: 'other' }),
    '{',
    '"text"',
    JSON.stringify(JSON.stringify({ ...base, domainName: 'acme' })),
  ]) {
    const route = routeBrokerMessage('notifications', payload, DEFAULT_CHANNELS);
    t.equal(route.kind, 'skip', payload);
    if (route.kind === 'skip') t.equal(route.channel, 'notifications');
  }
});

t.test('telemetry is routed by the tail of its channel, and must be a JSON object', async (t) => {
  t.same(routeBrokerMessage('telemetry:filtered:b-17', '{"value":1}', DEFAULT_CHANNELS), { kind: 'telemetry', room: 'building:b-17', payload: { value: 1 } });
  t.same(routeBrokerMessage('telemetry:filtered:a:b', '{}', DEFAULT_CHANNELS), { kind: 'telemetry', room: 'building:a:b', payload: {} }, 'the whole tail, colons included');
  for (const [channel, payload] of [
    ['telemetry:filtered:b1', 'nope'],
    ['telemetry:filtered:b1', '[]'],
    ['telemetry:filtered:b1', 'null'],
    ['telemetry:filtered:', '{}'],
    [`telemetry:filtered:${'b'.repeat(257)}`, '{}'],
    ['telemetry:filtered:b\n1', '{}'],
  ] as const) {
    t.match(routeBrokerMessage(channel, payload, DEFAULT_CHANNELS), { kind: 'skip', channel: 'telemetry' }, `${JSON.stringify(channel)} ${payload}`);
  }
  t.same(routeBrokerMessage('telemetry:raw', '{}', DEFAULT_CHANNELS), { kind: 'foreign' });
});

t.test('channel names are options; glob characters in the prefix are escaped in the pattern', async (t) => {
  const channels = { notifications: 'n-test', telemetryPrefix: 't[1]*?:' };
  t.equal(telemetryPattern(DEFAULT_CHANNELS), 'telemetry:filtered:*');
  t.equal(telemetryPattern(channels), 't\\[1\\]\\*\\?:*');
  t.equal(routeBrokerMessage('notifications', JSON.stringify(base), channels).kind, 'foreign');
  t.equal(routeBrokerMessage('n-test', JSON.stringify(base), channels).kind, 'notification');
  t.same(routeBrokerMessage('t[1]*?:b1', '{}', channels), { kind: 'telemetry', room: 'building:b1', payload: {} });
});

t.test('rooms and the building id rule', async (t) => {
  t.equal(domainRoom('acme'), 'domain:acme');
  t.equal(buildingRoom('b1'), 'building:b1');
  t.ok(isValidBuildingId('b1'));
  t.ok(isValidBuildingId('bâtiment 7 – aile nord'));
  t.ok(isValidBuildingId('b'.repeat(256)));
  t.ok(isValidBuildingId('tower \uD83C\uDFE2'), 'a surrogate pair is one character');
  const refused: Array<[string, unknown]> = [
    ['empty', ''],
    ['blank', ' '],
    ['257 characters', 'b'.repeat(257)],
    ['a tab', 'a\tb'],
    ['a C1 control', 'a\u0085b'],
    ['a line separator', 'a\u2028b'],
    ['a lone surrogate', 'a\uD800b'],
    ['a number', 1],
    ['null', null],
    ['undefined', undefined],
    ['an object', {}],
    ['an array', ['b1']],
  ];
  for (const [label, bad] of refused) t.notOk(isValidBuildingId(bad), `refuses ${label}`);
  t.ok(holdsAnyDomain(['a', 'b'], ['c', 'b']));
  t.notOk(holdsAnyDomain(['a'], []));
  t.notOk(holdsAnyDomain([], ['a']));
});

t.test('configuration: defaults, and every problem at once', async (t) => {
  const config = readRelayConfig({ REDIS_URL: 'redis://127.0.0.1:6379' });
  t.same(config, {
    port: 3000,
    redisUrl: 'redis://127.0.0.1:6379',
    frontendOrigin: 'http://localhost:5173',
    directoryUrl: 'http://digital-twin:3000',
    maxLifetimeMs: 900_000,
    channels: { notifications: 'notifications', telemetryPrefix: 'telemetry:filtered:' },
    logLevel: 'info',
  });
  t.equal(readRelayConfig({ REDIS_URL: 'redis://r', FRONTEND_URL: 'https://app.example.test/' }).frontendOrigin, 'https://app.example.test', 'the origin, without a path');
  t.equal(readRelayConfig({ REDIS_URL: 'redis://r', SOCKET_MAX_LIFETIME_SECS: '30' }).maxLifetimeMs, 30_000);
  let problems: string[] = [];
  try {
    readRelayConfig({ PORT: 'x', FRONTEND_URL: 'ftp://a', SOCKET_MAX_LIFETIME_SECS: '0', DIGITAL_TWIN_URL: 'nope' });
  } catch (err) {
    if (err instanceof ConfigError) problems = err.problems;
  }
  t.same(problems, [
    'PORT: expected an integer, got "x"',
    'REDIS_URL: required but not set',
    'FRONTEND_URL: not a http:// or https:// URL',
    'DIGITAL_TWIN_URL: not a http:// URL',
    'SOCKET_MAX_LIFETIME_SECS: expected at least 1, got 0',
  ]);
  t.throws(
    () => readRelayConfig({ REDIS_URL: 'redis://r', NOTIFICATIONS_CHANNEL: 'telemetry:filtered:alerts' }),
    { name: 'ConfigError', problems: ['NOTIFICATIONS_CHANNEL: "telemetry:filtered:alerts" starts with TELEMETRY_CHANNEL_PREFIX "telemetry:filtered:", so the telemetry pattern would match it too'] },
    'a notifications channel the telemetry pattern matches would deliver every notification twice',
  );
  t.throws(
    () => readRelayConfig({ NOTIFICATIONS_CHANNEL: 'telemetry:filtered:alerts' }),
    {
      name: 'ConfigError',
      problems: [
        'REDIS_URL: required but not set',
        'NOTIFICATIONS_CHANNEL: "telemetry:filtered:alerts" starts with TELEMETRY_CHANNEL_PREFIX "telemetry:filtered:", so the telemetry pattern would match it too',
      ],
    },
    'the overlap is reported with the other problems, not only on a second start',
  );
});
