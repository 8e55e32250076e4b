import t from 'tap';
import { accountIdOf, leavesNoAdministrator, mayGrantRole, removalAuthority } from '../../../cloud/tenancy/policy.js';
import { inviteLifetimeMs, newInviteCode } from '../../../cloud/tenancy/invite-codes.js';

const a = '7c0e0000-0000-4000-8000-000000000001';
const b = '7c0e0000-0000-4000-8000-000000000002';

t.test('removal authority: self first, then CanManageDomain', async (t) => {
  t.equal(removalAuthority({ sub: a, memberships: [] }, 'acme', a), 'self');
  t.equal(removalAuthority({ sub: a, memberships: [] }, 'acme', a.toUpperCase()), 'self', 'uuid case does not matter');
  t.equal(removalAuthority({ sub: a, memberships: [{ domainName: 'acme', role: 'business_admin' }] }, 'acme', b), 'manager');
  t.equal(removalAuthority({ sub: a, memberships: [{ domainName: 'hq', role: 'admin' }] }, 'acme', b), 'manager');
  t.equal(removalAuthority({ sub: a, memberships: [{ domainName: 'acme', role: 'facility_manager' }] }, 'acme', b), 'forbidden');
  t.equal(removalAuthority({ sub: a, memberships: [{ domainName: 'other', role: 'business_admin' }] }, 'acme', b), 'forbidden');
});

t.test('granting: up to one\'s own weight in the domain; a platform admin grants anything', async (t) => {
  const ba = [{ domainName: 'acme', role: 'business_admin' }];
  t.ok(mayGrantRole(ba, 'acme', 'business_admin'));
  t.ok(mayGrantRole(ba, 'acme', 'viewer'));
  t.notOk(mayGrantRole(ba, 'acme', 'admin'));
  t.notOk(mayGrantRole(ba, 'other', 'viewer'));
  t.ok(mayGrantRole([{ domainName: 'hq', role: 'admin' }], 'acme', 'admin'));
});

t.test('the last-administrator rule counts roles weighing at least business_admin', async (t) => {
  t.ok(leavesNoAdministrator({ business_admin: 1, member: 9 }, 'business_admin'));
  t.ok(leavesNoAdministrator({ admin: 1, facility_manager: 3 }, 'admin'));
  t.notOk(leavesNoAdministrator({ business_admin: 1, admin: 1 }, 'business_admin'));
  t.notOk(leavesNoAdministrator({ business_admin: 1 }, 'member'), 'removing a non-administrator is always fine');
  t.notOk(leavesNoAdministrator({ business_admin: 2 }, 'business_admin'));
  t.ok(leavesNoAdministrator({ business_admin: 1, owner: 5 }, 'business_admin'), 'unknown roles weigh 0');
});

t.test('account ids: only uuid subjects are accounts', async (t) => {
  t.equal(accountIdOf({ sub: a.toUpperCase() }), a);
  t.equal(accountIdOf({ sub: 'system:provisioner' }), undefined);
  t.equal(accountIdOf({ sub: 'ana@acme.test' }), undefined);
});

t.test('invite codes: 32 lowercase hex, 7 days by default', async (t) => {
  t.match(newInviteCode(), /^[0-9a-f]{32}$/);
  t.not(newInviteCode(), newInviteCode());
  t.equal(inviteLifetimeMs(), 7 * 24 * 3_600_000);
  t.equal(inviteLifetimeMs(1.5), 5_400_000);
  t.equal(inviteLifetimeMs(1 / 60), 60_000, 'whole milliseconds');
});
