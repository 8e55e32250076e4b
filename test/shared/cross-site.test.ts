/**
 * The cross-site guard on its own: which requests it refuses, and that its Express form answers 403 in
 * the shared error body before anything behind it runs.
 */
import t from 'tap';
import express from 'express';
import { request } from 'undici';
import { crossSiteRefusal, refuseCrossSiteWrites } from '../../shared/cross-site.js';
import { serve } from '../support/http.js';

t.test('a state-changing request marked cross-site, or with Origin null, is refused', async (t) => {
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    t.match(crossSiteRefusal({ method, headers: { 'sec-fetch-site': 'cross-site' } }), /Sec-Fetch-Site is cross-site/, `${method} cross-site`);
    t.match(crossSiteRefusal({ method, headers: { origin: 'null' } }), /Origin is null/, `${method} Origin null`);
  }
  t.ok(crossSiteRefusal({ method: 'POST', headers: { 'sec-fetch-site': ' Cross-Site ' } }), 'whatever its case and spacing');
  t.ok(crossSiteRefusal({ method: 'POST', headers: { 'sec-fetch-site': 'same-origin', origin: 'null' } }), 'Origin null wins over a same-origin mark');
});

t.test('same-origin, same-site, a user navigation, a real Origin, no marks at all, and reads pass', async (t) => {
  for (const site of ['same-origin', 'same-site', 'none']) {
    t.equal(crossSiteRefusal({ method: 'POST', headers: { 'sec-fetch-site': site } }), undefined, site);
  }
  t.equal(crossSiteRefusal({ method: 'POST', headers: { origin: 'https://app.lintel.build' } }), undefined, 'an Origin that is not null');
  t.equal(crossSiteRefusal({ method: 'POST', headers: {} }), undefined, 'a client that sends neither header');
  for (const method of ['GET', 'HEAD', 'OPTIONS']) {
    t.equal(crossSiteRefusal({ method, headers: { 'sec-fetch-site': 'cross-site', origin: 'null' } }), undefined, method);
  }
});

t.test('the middleware answers 403 Forbidden before the next handler runs', async (t) => {
  let reached = 0;
  const app = express();
  app.use(refuseCrossSiteWrites);
  app.all('/thing', (_req, res) => {
    reached++;
    res.status(204).end();
  });
  const { url } = await serve(t, app);
  const refused = await request(`${url}/thing`, { method: 'POST', headers: { 'sec-fetch-site': 'cross-site' } });
  t.equal(refused.statusCode, 403);
  t.match(await refused.body.json(), { type: 'Forbidden', message: /^cross-site request refused: Sec-Fetch-Site is cross-site/ });
  t.equal(reached, 0, 'the route never ran');
  const passed = await request(`${url}/thing`, { method: 'POST', headers: { 'sec-fetch-site': 'same-origin' } });
  await passed.body.dump();
  t.equal(passed.statusCode, 204);
  t.equal(reached, 1);
});
