import t from 'tap';
import { planDeviceRequest } from '../../../shared/devices/adapter.js';
import type { DeviceBinding } from '../../../shared/devices/bindings.js';

const setTarget: DeviceBinding = { path: '/set', method: 'PUT', fields: { target: 'sp' }, transport: 'http' };

// A registration may carry any absolute http(s) URL up to the broker's message size (about 1 MB). A
// long run of slashes that is not at the end of the endpoint's path once made the trailing-slash trim
// backtrack quadratically: planning one command took minutes and blocked every other request of the
// service meanwhile. This test has no clock; before the fix it never finished within the file timeout.
t.test('an endpoint path with a long run of inner slashes is planned like any other', async (t) => {
  const slashes = '/'.repeat(1_000_000);
  const plan = planDeviceRequest(`http://zgw.local:8080${slashes}dev/`, setTarget, { target: 20 });
  t.equal(plan.url, `http://zgw.local:8080${slashes}dev/set`, 'inner slashes kept, the trailing one trimmed');
  t.same(plan.body, { sp: 20 });
});

t.test('trailing slashes of an endpoint path are all trimmed, inner ones kept', async (t) => {
  t.equal(planDeviceRequest('http://zgw.local:8080/api//devices/0x00158d///', setTarget, {}).url, 'http://zgw.local:8080/api//devices/0x00158d/set');
  t.equal(planDeviceRequest('http://zgw.local:8080///', setTarget, {}).url, 'http://zgw.local:8080/set', 'a path of slashes only');
  t.equal(planDeviceRequest('http://zgw.local:8080', setTarget, {}).url, 'http://zgw.local:8080/set', 'no path');
});
