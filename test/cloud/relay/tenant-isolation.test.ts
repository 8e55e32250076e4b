/**
 * Tenant isolation as a property: for random accounts, memberships and buildings, and thousands of
 * publishes, every socket receives exactly the messages the rule grants it, in order, once each.
 */
import fc from 'fast-check';
import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { claimsOf, connectClient, notification, publisher, startRelay, subscribe, uniqueName, waitFor, type Client } from './support/relay-harness.js';

type Message =
  | { kind: 'scoped'; domain: number }
  | { kind: 'broadcast' }
  | { kind: 'renamed'; domain: number }
  | { kind: 'garbage' }
  | { kind: 'telemetry'; building: number }
  | { kind: 'stray-telemetry' };

interface World {
  domainCount: number;
  buildings: number[][];
  accounts: Array<{ domains: number[]; wants: number[]; sockets: number }>;
  messages: Message[];
}

const world: fc.Arbitrary<World> = fc.integer({ min: 2, max: 6 }).chain((domainCount) => {
  const domainSet = fc.uniqueArray(fc.nat(domainCount - 1), { maxLength: Math.min(3, domainCount) });
  return fc.integer({ min: 1, max: 8 }).chain((buildingCount) =>
    fc.record({
      domainCount: fc.constant(domainCount),
      buildings: fc.array(domainSet, { minLength: buildingCount, maxLength: buildingCount }),
      accounts: fc.array(
        fc.record({
          domains: domainSet,
          wants: fc.uniqueArray(fc.nat(buildingCount - 1), { maxLength: buildingCount }),
          sockets: fc.integer({ min: 1, max: 2 }),
        }),
        { minLength: 1, maxLength: 8 },
      ),
      messages: fc.array(
        fc.oneof(
          { weight: 4, arbitrary: fc.record({ kind: fc.constant('scoped' as const), domain: fc.nat(domainCount - 1) }) },
          { weight: 1, arbitrary: fc.constant({ kind: 'broadcast' as const }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant('renamed' as const), domain: fc.nat(domainCount - 1) }) },
          { weight: 1, arbitrary: fc.constant({ kind: 'garbage' as const }) },
          { weight: 5, arbitrary: fc.record({ kind: fc.constant('telemetry' as const), building: fc.nat(buildingCount - 1) }) },
          { weight: 1, arbitrary: fc.constant({ kind: 'stray-telemetry' as const }) },
        ),
        { minLength: 200, maxLength: 600 },
      ),
    }),
  );
});

t.test('no socket ever receives a message meant for another tenant, and each gets all of its own once', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory });
  const redis = publisher(t);
  let publishes = 0;
  let deliveries = 0;
  let runs = 0;

  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const run = uniqueName('run');
      const domain = (i: number) => `${run}-d${i}`;
      const building = (i: number) => `${run}-b${i}`;
      w.buildings.forEach((domains, i) => directory.set(building(i), domains.map(domain)));

      const sockets: Array<{ client: Client; domains: Set<number>; rooms: Set<number> }> = [];
      try {
        for (const [a, account] of w.accounts.entries()) {
          for (let s = 0; s < account.sockets; s++) {
            const client = await connectClient({ teardown: () => undefined }, relay.url, claimsOf({ sub: `${run}-a${a}`, domains: account.domains.map(domain) }));
            const entry = { client, domains: new Set(account.domains), rooms: new Set<number>() };
            sockets.push(entry);
            for (const b of account.wants) {
              const allowed = (w.buildings[b] ?? []).some((d) => entry.domains.has(d));
              const ack = await subscribe(client, building(b));
              if (allowed ? !ack.subscribed : ack.subscribed || ack.reason !== 'forbidden') {
                throw new Error(`account ${a} building ${b}: ack ${JSON.stringify(ack)}, expected ${allowed ? 'subscribed' : 'forbidden'}`);
              }
              if (ack.subscribed) entry.rooms.add(b);
            }
          }
        }

        const pipeline = redis.pipeline();
        w.messages.forEach((m, seq) => {
          const id = `${run}-${seq}`;
          switch (m.kind) {
            case 'scoped':
              pipeline.publish(relay.channels.notifications, JSON.stringify(notification({ id, domainName: domain(m.domain) })));
              break;
            case 'broadcast':
              pipeline.publish(relay.channels.notifications, JSON.stringify(notification({ id })));
              break;
            case 'renamed':
              pipeline.publish(relay.channels.notifications, JSON.stringify({ ...notification({ id }), domain: domain(m.domain) }));
              break;
            case 'garbage':
              pipeline.publish(relay.channels.notifications, `{"id":"${id}","domainName":`);
              break;
            case 'telemetry':
              pipeline.publish(`${relay.channels.telemetryPrefix}${building(m.building)}`, JSON.stringify({ id }));
              break;
            case 'stray-telemetry':
              pipeline.publish(`${relay.channels.telemetryPrefix}${run}-elsewhere`, JSON.stringify({ id }));
              break;
          }
        });
        const fence = `${run}-fence`;
        pipeline.publish(relay.channels.notifications, JSON.stringify(notification({ id: fence })));
        await pipeline.exec();
        publishes += w.messages.length + 1;

        for (const { client, domains, rooms } of sockets) {
          await waitFor(() => client.notifications.some((n) => (n as { id: string }).id === fence), 'the fence');
          const expected: string[] = [];
          w.messages.forEach((m, seq) => {
            const granted =
              (m.kind === 'scoped' && domains.has(m.domain)) || m.kind === 'broadcast' || (m.kind === 'telemetry' && rooms.has(m.building));
            if (granted) expected.push(`${run}-${seq}`);
          });
          expected.push(fence);
          const received: string[] = [];
          const seen = new Map<string, number>();
          for (const e of [...client.notifications, ...client.telemetry]) {
            const id = (e as { id: string }).id;
            received.push(id);
            seen.set(id, (seen.get(id) ?? 0) + 1);
          }
          const leaks = received.filter((id) => !expected.includes(id));
          const duplicates = [...seen].filter(([, n]) => n > 1);
          const missing = expected.filter((id) => !seen.has(id));
          if (leaks.length + duplicates.length + missing.length > 0) {
            throw new Error(`leaks ${leaks.length}, duplicates ${duplicates.length}, missing ${missing.length}`);
          }
          // One broker connection and one socket: each event stream keeps the publish order.
          const order = (list: unknown[]) => list.map((e) => (e as { id: string }).id);
          const inPublishOrder = (ids: string[]) => ids.every((id, i) => i === 0 || expected.indexOf(ids[i - 1] as string) < expected.indexOf(id));
          if (!inPublishOrder(order(client.notifications)) || !inPublishOrder(order(client.telemetry))) throw new Error('out of order');
          deliveries += received.length;
        }
      } finally {
        for (const { client } of sockets) client.socket.close();
      }
      runs++;
    }),
    { numRuns: 25 },
  );

  t.equal(runs, 25);
  t.ok(publishes >= 2000, `thousands of publishes (${publishes})`);
  t.ok(deliveries > 0, `${deliveries} deliveries, each checked against the rule`);
  t.same(directory.unexpected, [], 'the directory was only asked about buildings it knows');
  await waitFor(async () => (await relay.relay.io.fetchSockets()).length === 0, 'every socket closed');
});
