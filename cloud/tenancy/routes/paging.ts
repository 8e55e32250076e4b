/**
 * Keyset paging of domain listings: `?limit=` (1 to 500) and `?after=<last name seen>`. Without
 * `limit` the listing is whole (after `after`, when given), as the seed's routes answer it; with it, a
 * full page links to the next one with a `Link: <…>; rel="next"` header.
 */
import type { Request, Response } from 'express';
import { HttpError } from '../../../shared/errors.js';
import type { Page } from '../model.js';
import { isDomainName } from '../wire.js';

export const MAX_PAGE_SIZE = 500;

function single(req: Request, name: string): string | undefined {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new HttpError(400, `${name}: expected one value`);
  return value;
}

/** Reads the page a listing request asks for, or throws a 400 naming the bad parameter. */
export function pageOf(req: Request): Page {
  const problems: string[] = [];
  const limitText = single(req, 'limit');
  const after = single(req, 'after');
  let limit: number | undefined;
  if (limitText !== undefined) {
    limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_PAGE_SIZE) {
      problems.push(`limit: expected an integer from 1 to ${MAX_PAGE_SIZE}, got ${JSON.stringify(limitText)}`);
    }
  }
  if (after !== undefined && !isDomainName(after)) problems.push(`after: expected a domain name, got ${JSON.stringify(after.slice(0, 70))}`);
  if (problems.length > 0) throw new HttpError(400, problems.join('; '), { errors: problems });
  return { after, limit };
}

/** Sets the `Link` header to the next page when this one came back full. */
export function linkNextPage(req: Request, res: Response, page: Page, names: readonly string[]): void {
  const last = names[names.length - 1];
  if (page.limit === undefined || names.length < page.limit || last === undefined) return;
  const next = new URLSearchParams({ after: last, limit: String(page.limit) });
  res.set('link', `<${req.baseUrl}${req.path}?${next.toString()}>; rel="next"`);
}
