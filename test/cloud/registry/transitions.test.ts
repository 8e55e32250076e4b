import t from 'tap';
import { transition, STATUS_TRANSITIONS } from '../../../cloud/registry/transitions.js';
import type { LicenseStatus, Status } from '../../../cloud/registry/model.js';
import { startRegistry, type RegistryUnderTest } from './support/harness.js';

t.test('the two machines, as pure functions', async (t) => {
  const ready = transition({ status: 'provisioning', licenseStatus: 'active', statusDetail: null }, { kind: 'provisioned', outcome: 'ready', detail: 'ok' });
  t.same(ready, { ok: true, status: 'ready', licenseStatus: 'active', statusDetail: 'ok', changed: true });
  const failed = transition({ status: 'provisioning', licenseStatus: 'expired', statusDetail: null }, { kind: 'provisioned', outcome: 'failed', detail: 'quota' });
  t.same(failed, { ok: true, status: 'failed', licenseStatus: 'expired', statusDetail: 'quota', changed: true }, 'a report never touches the license');
  const suspended = transition({ status: 'ready', licenseStatus: 'active', statusDetail: 'x' }, { kind: 'suspend' });
  t.same(suspended, { ok: true, status: 'suspended', licenseStatus: 'suspended', statusDetail: 'x', changed: true });
  t.match(transition({ status: 'suspended', licenseStatus: 'suspended', statusDetail: null }, { kind: 'provisioned', outcome: 'ready', detail: null }), { ok: false });
  const replay = transition({ status: 'failed', licenseStatus: 'active', statusDetail: 'first' }, { kind: 'provisioned', outcome: 'failed', detail: 'second' });
  t.same(replay, { ok: true, status: 'failed', licenseStatus: 'active', statusDetail: 'first', changed: false }, 'a replay changes nothing');
  for (const from of Object.keys(STATUS_TRANSITIONS) as Status[]) t.equal(STATUS_TRANSITIONS[from].suspend, 'suspended', `suspend from ${from}`);
});

type Action = 'ready' | 'failed' | 'suspend' | 'bogus' | 'missing' | 'uppercase';
const ACTIONS: Action[] = ['ready', 'failed', 'suspend', 'bogus', 'missing', 'uppercase'];

/** What each action does from each Status: the next Status, or the HTTP status of a refusal. */
const TABLE: Record<Status, Record<Action, Status | 400 | 409>> = {
  provisioning: { ready: 'ready', failed: 'failed', suspend: 'suspended', bogus: 400, missing: 400, uppercase: 400 },
  ready: { ready: 'ready', failed: 409, suspend: 'suspended', bogus: 400, missing: 400, uppercase: 400 },
  failed: { ready: 409, failed: 'failed', suspend: 'suspended', bogus: 400, missing: 400, uppercase: 400 },
  suspended: { ready: 409, failed: 409, suspend: 'suspended', bogus: 400, missing: 400, uppercase: 400 },
};

const BODIES: Record<Exclude<Action, 'suspend'>, string> = {
  ready: JSON.stringify({ status: 'ready', detail: 'provisioned in eu-1' }),
  failed: JSON.stringify({ status: 'failed', detail: 'quota exceeded' }),
  bogus: JSON.stringify({ status: 'suspended', detail: 'not the provisioner\'s call' }),
  missing: JSON.stringify({ detail: 'no status' }),
  uppercase: JSON.stringify({ Status: 'READY' }),
};

async function organizationIn(app: RegistryUnderTest, status: Status, n: number): Promise<string> {
  const created = await app.signup({ Name: `org-${status}-${n}`, Tier: 'pooled' });
  const id = (created.json as { ID: string }).ID;
  const steps: Record<Status, [string, string | undefined][]> = {
    provisioning: [],
    ready: [['status', BODIES.ready]],
    failed: [['status', BODIES.failed]],
    suspended: [['suspend', undefined]],
  };
  for (const [route, body] of steps[status]) {
    const r = await app.signed('POST', `/internal/organizations/${id}/${route}`, body);
    if (r.status !== 200) throw new Error(`setting up ${status}: ${r.status} ${r.text}`);
  }
  return id;
}

async function rowOf(app: RegistryUnderTest, id: string): Promise<{ status: Status; license_status: LicenseStatus; status_detail: string | null }> {
  const result = await app.pool.query('SELECT status, license_status, status_detail FROM organizations WHERE id = $1', [id]);
  return result.rows[0];
}

t.test('the transition table, over HTTP, against the database', async (t) => {
  const app = await startRegistry(t);
  let n = 0;
  for (const from of Object.keys(TABLE) as Status[]) {
    for (const action of ACTIONS) {
      const id = await organizationIn(app, from, n++);
      const before = await rowOf(app, id);
      const answer =
        action === 'suspend'
          ? await app.signed('POST', `/internal/organizations/${id}/suspend`)
          : await app.signed('POST', `/internal/organizations/${id}/status`, BODIES[action]);
      const expected = TABLE[from][action];
      const after = await rowOf(app, id);
      const label = `${from} + ${action}`;
      if (typeof expected === 'number') {
        t.equal(answer.status, expected, `${label} is refused with ${expected}`);
        t.same(after, before, `${label}: nothing written`);
        continue;
      }
      t.equal(answer.status, 200, label);
      t.equal(after.status, expected, `${label} → ${expected}`);
      t.match(answer.json, { ID: id, Status: expected, LicenseStatus: after.license_status }, `${label}: the answer is the stored organization`);
      if (action === 'suspend') t.equal(after.license_status, 'suspended', `${label}: LicenseStatus suspended too`);
      else t.equal(after.license_status, before.license_status, `${label}: LicenseStatus untouched`);
      if (from === 'provisioning' && action === 'failed') t.equal(after.status_detail, 'quota exceeded', 'the failure detail is stored');
      if (from === 'provisioning' && action === 'ready') t.equal(after.status_detail, 'provisioned in eu-1');
    }
  }
});

t.test('LicenseStatus is its own machine: an expired license survives a provisioning report', async (t) => {
  const app = await startRegistry(t);
  const id = await organizationIn(app, 'provisioning', 0);
  await app.pool.query("UPDATE organizations SET license_status = 'expired' WHERE id = $1", [id]);
  const ready = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'ready' }));
  t.match(ready.json, { Status: 'ready', LicenseStatus: 'expired', StatusDetail: null });
  const suspended = await app.signed('POST', `/internal/organizations/${id}/suspend`, '');
  t.match(suspended.json, { Status: 'suspended', LicenseStatus: 'suspended' });
});

t.test('status: the detail is optional, keys are case-insensitive, and a detail that is no text is 400', async (t) => {
  const app = await startRegistry(t);
  const id = await organizationIn(app, 'provisioning', 0);
  for (const body of [{ status: 'failed', detail: 7 }, { status: 'failed', colour: 'red' }, { status: 'ready', STATUS: 'ready' }]) {
    t.equal((await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify(body))).status, 400, JSON.stringify(body).slice(0, 60));
  }
  t.equal((await app.signed('POST', `/internal/organizations/${id}/status`, '')).status, 400, 'no body');
  t.equal((await app.signed('POST', `/internal/organizations/${id}/status`, 'null')).status, 400, 'null body');
  t.equal((await rowOf(app, id)).status, 'provisioning', 'still untouched');
  const ok = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ Status: 'failed', DETAIL: 'disk full' }));
  t.match(ok.json, { Status: 'failed', StatusDetail: 'disk full' });
});

t.test('concurrent reports for one organization: one transition, the other refused or a replay', async (t) => {
  const app = await startRegistry(t);
  const id = await organizationIn(app, 'provisioning', 0);
  const answers = await Promise.all([
    app.signed('POST', `/internal/organizations/${id}/status`, BODIES.ready),
    app.signed('POST', `/internal/organizations/${id}/status`, BODIES.failed),
  ]);
  t.same(answers.map((a) => a.status).sort(), [200, 409]);
  const winner = answers.find((a) => a.status === 200)?.json as { Status: string };
  t.equal((await rowOf(app, id)).status, winner.Status, 'the stored status is the winner\'s');
});
