import t from 'tap';
import { parseNotification } from '../../shared/notification.js';

const base = { id: 'n1', kind: 'alert', severity: 'danger', title: 'Too warm', message: 'Room r1 is 29 °C', buildingId: 'b1', createdAt: '2026-11-22T10:00:00.000Z' };

t.test('a scoped and an unscoped notification parse', async (t) => {
  const scoped = parseNotification(JSON.stringify({ ...base, domainName: 'acme', roomId: 'r1', metric: 'temperature', field: 'temperature' }));
  t.ok(scoped.ok);
  if (scoped.ok) t.equal(scoped.notification.domainName, 'acme');
  const broadcast = parseNotification({ ...base, kind: 'manual', severity: 'info' });
  t.ok(broadcast.ok);
  if (broadcast.ok) t.equal(broadcast.notification.domainName, undefined);
});

t.test('a renamed domain field is refused, never turned into a broadcast', async (t) => {
  for (const key of ['domain', 'domainId', 'DomainName', 'domain_name']) {
    const r = parseNotification({ ...base, [key]: 'acme' });
    t.notOk(r.ok, key);
    if (!r.ok) t.same(r.errors, [`${key}: not a field of the notification schema`]);
  }
});

t.test('malformed payloads', async (t) => {
  t.same(parseNotification('{oops'), { ok: false, errors: ['payload is not valid JSON'] });
  t.same(parseNotification('[]'), { ok: false, errors: ['payload is not a JSON object'] });
  t.notOk(parseNotification({ ...base, severity: 'critical' }).ok);
  t.notOk(parseNotification({ ...base, domainName: 42 }).ok);
  t.notOk(parseNotification({ ...base, domainName: '' }).ok);
  const { id: _id, ...noId } = base;
  t.notOk(parseNotification(noId).ok);
});
