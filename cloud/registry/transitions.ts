/**
 * The two independent state machines of an organization, as data.
 *
 * Status tracks provisioning: only the provisioner's report moves it out of provisioning, to ready or
 * failed; suspension moves any state to suspended. LicenseStatus starts active and only suspension
 * moves it. A provisioning report never touches the license, and nothing but suspension touches both.
 * A report repeating the current state is a replay (the provisioner retries) and changes nothing.
 */
import type { LicenseStatus, OrganizationEvent, Status } from './model.js';

type StatusTrigger = 'ready' | 'failed' | 'suspend';
type LicenseTrigger = 'suspend';

export const STATUS_TRANSITIONS: Readonly<Record<Status, Partial<Record<StatusTrigger, Status>>>> = {
  provisioning: { ready: 'ready', failed: 'failed', suspend: 'suspended' },
  ready: { ready: 'ready', suspend: 'suspended' },
  failed: { failed: 'failed', suspend: 'suspended' },
  suspended: { suspend: 'suspended' },
};

export const LICENSE_TRANSITIONS: Readonly<Record<LicenseStatus, Partial<Record<LicenseTrigger, LicenseStatus>>>> = {
  active: { suspend: 'suspended' },
  suspended: { suspend: 'suspended' },
  expired: { suspend: 'suspended' },
};

export type Transition =
  | { ok: true; status: Status; licenseStatus: LicenseStatus; statusDetail: string | null; changed: boolean }
  | { ok: false; reason: string };

/**
 * Where an event takes an organization, or why it may not.
 *
 * @example
 * transition({ status: 'provisioning', licenseStatus: 'active', statusDetail: null },
 *            { kind: 'provisioned', outcome: 'ready', detail: null });
 * // { ok: true, status: 'ready', licenseStatus: 'active', statusDetail: null, changed: true }
 */
export function transition(
  current: { status: Status; licenseStatus: LicenseStatus; statusDetail: string | null },
  event: OrganizationEvent,
): Transition {
  const statusTrigger: StatusTrigger = event.kind === 'suspend' ? 'suspend' : event.outcome;
  const status = STATUS_TRANSITIONS[current.status][statusTrigger];
  if (status === undefined) {
    return { ok: false, reason: `status ${current.status} cannot become ${statusTrigger === 'suspend' ? 'suspended' : statusTrigger}` };
  }
  const licenseStatus = event.kind === 'suspend' ? (LICENSE_TRANSITIONS[current.licenseStatus].suspend ?? current.licenseStatus) : current.licenseStatus;
  const changed = status !== current.status || licenseStatus !== current.licenseStatus;
  // The detail belongs to a provisioning report that changes the state; a replay keeps the first one.
  const statusDetail = event.kind === 'provisioned' && changed ? event.detail : current.statusDetail;
  return { ok: true, status, licenseStatus, statusDetail, changed };
}
