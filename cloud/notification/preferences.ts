/**
 * Per-domain, per-metric opt-ins: plain functions over the stored preference list.
 */
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';

/** One stored entry of a preferences record. */
export interface PreferenceEntry {
  notificationType: string;
  isSubscribed: boolean;
}

/** A requested change: the entry that replaces any existing entry of its type. */
export type PreferenceChange = PreferenceEntry;

/**
 * Applies changes to a preference list. An entry for a changed type replaces the existing one in place;
 * a new type is appended. The last change for a type wins. Entries of other types are kept untouched.
 *
 * @example
 * applyPreferenceChanges([{ notificationType: 'temperature', isSubscribed: true }],
 *   [{ notificationType: 'temperature', isSubscribed: false }]);
 * // [{ notificationType: 'temperature', isSubscribed: false }]
 */
export function applyPreferenceChanges(existing: readonly PreferenceEntry[], changes: readonly PreferenceChange[]): PreferenceEntry[] {
  const result = existing.map((entry) => ({ notificationType: entry.notificationType, isSubscribed: entry.isSubscribed }));
  for (const change of changes) {
    const entry = { notificationType: change.notificationType, isSubscribed: change.isSubscribed };
    const at = result.findIndex((e) => e.notificationType === change.notificationType);
    if (at >= 0) result[at] = entry;
    else result.push(entry);
  }
  return dedupeByType(result);
}

/** Keeps the last entry of each type, at the position of the first: a list written elsewhere may repeat. */
function dedupeByType(entries: readonly PreferenceEntry[]): PreferenceEntry[] {
  const last = new Map<string, PreferenceEntry>();
  for (const entry of entries) last.set(entry.notificationType, entry);
  return [...last.values()];
}

/** Every alertable metric switched on: what /subscribe stores when no type is named. */
export function allAlertableOn(): PreferenceChange[] {
  return ALERTABLE_METRICS.map((notificationType) => ({ notificationType, isSubscribed: true }));
}

/** The types switched on, for the recipient query. */
export function subscribedTypesOf(entries: readonly PreferenceEntry[]): string[] {
  return dedupeByType(entries).filter((e) => e.isSubscribed).map((e) => e.notificationType);
}

/** The types with a stored choice, on or off: a stored choice is never overwritten by the migration. */
export function configuredTypesOf(entries: readonly PreferenceEntry[]): string[] {
  return dedupeByType(entries).map((e) => e.notificationType);
}
