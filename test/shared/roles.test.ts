import t from 'tap';
import { canEditDomains, canManageDomain, isAdministrator, isPlatformAdmin, roleWeight, isKnownRole } from '../../shared/roles.js';

t.test('role weights, unknown roles weigh 0', async (t) => {
  t.equal(roleWeight('viewer'), 10);
  t.equal(roleWeight('member'), 20);
  t.equal(roleWeight('facility_manager'), 30);
  t.equal(roleWeight('business_admin'), 50);
  t.equal(roleWeight('admin'), 100);
  t.equal(roleWeight('owner'), 0);
  t.equal(roleWeight('__proto__'), 0);
  t.equal(roleWeight('toString'), 0);
  t.ok(isKnownRole('viewer'));
  t.notOk(isKnownRole('constructor'));
});

t.test('canManageDomain needs weight ≥ 50 in that domain, or a platform admin anywhere', async (t) => {
  t.ok(canManageDomain([{ domainName: 'acme', role: 'business_admin' }], 'acme'));
  t.notOk(canManageDomain([{ domainName: 'acme', role: 'business_admin' }], 'globex'));
  t.notOk(canManageDomain([{ domainName: 'acme', role: 'facility_manager' }], 'acme'));
  t.ok(canManageDomain([{ domainName: 'elsewhere', role: 'admin' }], 'acme'));
  t.notOk(canManageDomain([], 'acme'));
});

t.test('canEditDomains: system subject, ≥ 30 in one of the domains, or admin', async (t) => {
  t.ok(canEditDomains({ sub: 'system:provisioner', memberships: [] }, ['acme']));
  t.ok(canEditDomains({ sub: 'u', memberships: [{ domainName: 'b', role: 'facility_manager' }] }, ['a', 'b']));
  t.notOk(canEditDomains({ sub: 'u', memberships: [{ domainName: 'b', role: 'member' }] }, ['a', 'b']));
  t.notOk(canEditDomains({ sub: 'u', memberships: [{ domainName: 'c', role: 'business_admin' }] }, ['a', 'b']));
  t.ok(canEditDomains({ sub: 'u', memberships: [{ domainName: 'c', role: 'admin' }] }, ['a']));
  t.notOk(canEditDomains({ sub: 'u', memberships: [{ domainName: 'a', role: 'viewer' }] }, []));
});

t.test('administrators weigh at least business_admin', async (t) => {
  t.ok(isAdministrator('business_admin'));
  t.ok(isAdministrator('admin'));
  t.notOk(isAdministrator('facility_manager'));
  t.notOk(isAdministrator('root'));
  t.ok(isPlatformAdmin([{ domainName: 'x', role: 'admin' }]));
  t.notOk(isPlatformAdmin([{ domainName: 'x', role: 'business_admin' }]));
});
