/**
 * Who may do what to a building: the building's domains come from the directory (forwarding the
 * caller's claims), then the shared policies decide.
 */
import type { Request, Response } from 'express';
import { domainsOf as callerDomains, isSystemSubject } from '../../../shared/claims.js';
import { DirectoryError, type BuildingDirectory } from '../../../shared/directory.js';
import { HttpError } from '../../../shared/errors.js';
import { callerOf, rawClaimsOf } from '../../../shared/http.js';
import { NAME_EXPECTATION, NonEmptyString, describeValue } from '../../../shared/kinds.js';
import { canEditDomains, isPlatformAdmin } from '../../../shared/roles.js';

/**
 * A building or room id from the path, by the rule readings carry ids (NonEmptyString); otherwise 400,
 * before the directory is asked or PostgreSQL, which stores no NUL in text, is handed it.
 */
export function pathId(req: Request, name: string): string {
  const value = req.params[name];
  if (!NonEmptyString.is(value)) {
    throw new HttpError(400, `invalid ${name} in the path`, { errors: [{ field: name, message: `expected ${NAME_EXPECTATION}, got ${describeValue(value)}` }] });
  }
  return value;
}

/** The building's domains; a failed lookup is 502 (the directory is an upstream). */
export async function buildingDomains(directory: BuildingDirectory, buildingId: string, req: Request): Promise<string[]> {
  try {
    return await directory.domainsOf(buildingId, rawClaimsOf(req));
  } catch (err) {
    if (err instanceof DirectoryError) throw new HttpError(502, 'the building directory could not be reached; try again');
    throw err;
  }
}

/** Edits (thresholds, device actions): CanEditDomains over the building's domains, else 403. */
export async function requireEdit(directory: BuildingDirectory, buildingId: string, req: Request, res: Response): Promise<void> {
  const domains = await buildingDomains(directory, buildingId, req);
  if (!canEditDomains(callerOf(res), domains)) {
    throw new HttpError(403, 'editing this building needs the facility_manager role (or higher) in one of its domains');
  }
}

/** Reads (the sensor listing): a membership in one of the building's domains, a system caller, or an admin. */
export async function requireRead(directory: BuildingDirectory, buildingId: string, req: Request, res: Response): Promise<void> {
  const claims = callerOf(res);
  const domains = await buildingDomains(directory, buildingId, req);
  if (isSystemSubject(claims) || isPlatformAdmin(claims.memberships)) return;
  const mine = new Set(callerDomains(claims));
  if (!domains.some((d) => mine.has(d))) throw new HttpError(403, 'this building is not in any of your domains');
}
