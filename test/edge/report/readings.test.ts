import t from 'tap';
import { validateReading } from '../../../shared/catalog/validate.js';
import { batchIdOf, buildReadings, encodeBatch, peopleFromDevices } from '../../../edge/src/report/readings.js';
import { auditBody } from '../../../edge/src/report/audit.js';

const tick = {
  buildingId: 'hq',
  timestamp: Date.UTC(2026, 10, 22, 19, 4, 14),
  zones: [{ id: 'lobby', devicesPerPerson: 1.5 }, { id: 'cafe' }, { id: 'office', devicesPerPerson: 2 }],
  counts: { lobby: 4, cafe: 2, office: 0 },
  transitions: [
    { from: 'lobby', to: 'cafe', count: 3 },
    { from: 'cafe', to: 'lobby', count: 0 },
  ],
  apClients: [
    { ap: 'ap-lobby-1', stations: 5 },
    { ap: 'ap-cafe-1', stations: 3 },
  ],
};

t.test('one batch holds every zone, ratios where set, transitions and AP clients', async (t) => {
  const { readings, refused } = buildReadings(tick);
  t.same(refused, []);
  const ts = tick.timestamp;
  t.same(readings, [
    { type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: ts, totalDeviceCount: 4 },
    { type: 'ratioDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: ts, ratioDeviceCount: 3 },
    { type: 'totalDeviceCount', buildingId: 'hq', roomId: 'cafe', timestamp: ts, totalDeviceCount: 2 },
    { type: 'totalDeviceCount', buildingId: 'hq', roomId: 'office', timestamp: ts, totalDeviceCount: 0 },
    { type: 'ratioDeviceCount', buildingId: 'hq', roomId: 'office', timestamp: ts, ratioDeviceCount: 0 },
    { type: 'zoneTransition', buildingId: 'hq', roomId: 'cafe', fromRoomId: 'lobby', timestamp: ts, zoneTransition: 3 },
    { type: 'zoneTransition', buildingId: 'hq', roomId: 'lobby', fromRoomId: 'cafe', timestamp: ts, zoneTransition: 0 },
    { type: 'apClients', buildingId: 'hq', roomId: 'ap-lobby-1', timestamp: ts, apClients: 5 },
    { type: 'apClients', buildingId: 'hq', roomId: 'ap-cafe-1', timestamp: ts, apClients: 3 },
  ]);
  for (const r of readings) t.ok(validateReading(r).ok, `${r.type} ${r.roomId} validates against the catalog`);
});

t.test('ratios round up, and an empty zone is 0', async (t) => {
  t.equal(peopleFromDevices(0, 1.6), 0);
  t.equal(peopleFromDevices(1, 1.6), 1);
  t.equal(peopleFromDevices(5, 1.6), 4);
  t.equal(peopleFromDevices(7, 0.7), 10, 'no float drift past an exact quotient');
  t.equal(peopleFromDevices(3, 1.5), 2);
});

t.test('a reading the catalog refuses is not sent, and says why', async (t) => {
  const { readings, refused } = buildReadings({ ...tick, zones: [{ id: '' }], transitions: [], apClients: [] });
  t.same(readings, []);
  t.equal(refused.length, 1);
  t.equal(refused[0]!.type, 'totalDeviceCount');
  t.match(refused[0]!.errors, [{ field: 'roomId' }]);
});

t.test('the batch body is canonical JSON with a readable batch id that passes the audit', async (t) => {
  const { readings } = buildReadings(tick);
  const batchId = batchIdOf('hq', tick.timestamp);
  t.equal(batchId, 'hq@2026-11-22T19:04:14.000Z');
  const body = encodeBatch(batchId, readings);
  t.same(JSON.parse(body), { batchId, readings });
  t.same(auditBody(body), []);
});
