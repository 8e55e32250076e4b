/**
 * Room names and the rule for a client-supplied building id. These are the only rooms the relay ever
 * joins a socket to; a client chooses none of them directly.
 */

import { MAX_NAME_LENGTH, NonEmptyString } from '../../shared/kinds.js';

/** Longest building id a client may send: the longest telemetry accepts and publishes. */
export const MAX_BUILDING_ID_LENGTH = MAX_NAME_LENGTH;

/** The room a membership of domain `name` puts a socket in at connect. */
export function domainRoom(name: string): string {
  return `domain:${name}`;
}

/** The room subscribe_building puts a socket in once the membership check passed. */
export function buildingRoom(buildingId: string): string {
  return `building:${buildingId}`;
}

/**
 * True for a string a client may name a building with: non-empty, at most 256 characters, no control
 * characters, no lone surrogates and not only blanks.
 *
 * @example
 * isValidBuildingId('b-17'); // true
 * isValidBuildingId('b\n17'); // false
 * isValidBuildingId('b\uD800'); // false
 * isValidBuildingId(17); // false
 */
export function isValidBuildingId(value: unknown): value is string {
  // The rule of every id telemetry accepts (a reading's buildingId is a NonEmptyString): an id it
  // stores and publishes is one a browser can subscribe to, and one a directory URL can carry.
  return NonEmptyString.is(value);
}

/** True when the account holds at least one of the building's domains. */
export function holdsAnyDomain(accountDomains: readonly string[], buildingDomains: readonly string[]): boolean {
  const held = new Set(accountDomains);
  return buildingDomains.some((d) => held.has(d));
}
