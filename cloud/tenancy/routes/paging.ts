/**
 * Keyset paging of domain listings: `?limit=` (1 to 500) and `?after=<last name seen>`. Without
 * `limit` the listing is whole (after `after`, when given), as the seed's routes answer it; with it, a
 * full page links to the next one with a `Link: <…>; rel="next"` header.
 *
 * A whole listing can grow without bound (any account may make public domains, a domain's manager
 * subdomains), so it is read and written a page at a time (sendWholeListing), as registry's pending
 * list is: built whole, it held every row in memory, blocked the event loop while it was serialised
 * (the login path too), and past the longest string V8 can hold, failed every call.
 */
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { sendArrayInPages } from '../../../shared/array-in-pages.js';
import { describeError, HttpError } from '../../../shared/errors.js';
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

/** Reads the entries after `after` (from the first, when undefined), in name order, at most `limit`. */
export type PageReader<T> = (page: { after?: string | undefined; limit: number }) => Promise<readonly T[]>;

/** A listing answered whole: what it lists (for the log), its first page, and how it reads and shows the rest. */
export interface WholeListing<T extends { name: string }> {
  /** What is listed, as a log line names it: `public domains`. */
  what: string;
  /** The first MAX_PAGE_SIZE entries, read by the caller (a 404 is still possible then). */
  first: readonly T[];
  readPage: PageReader<T>;
  toJson: (entry: T) => Record<string, unknown>;
}

/**
 * Answers 200 with the JSON array of every entry of `listing`, the same bytes `res.json` would send
 * for the whole list, written MAX_PAGE_SIZE entries at a time (the pages a client following `Link`
 * would read; see sendArrayInPages). Pages are separate reads: an entry added or removed meanwhile may
 * or may not be listed, but none is listed twice or out of order.
 */
export function sendWholeListing<T extends { name: string }>(res: Response, listing: WholeListing<T>, logger: Logger | undefined): Promise<void> {
  return sendArrayInPages(res, {
    first: listing.first,
    elementsOf: (page) => page.map(listing.toJson),
    after: (page) => {
      const last = page[page.length - 1];
      return page.length < MAX_PAGE_SIZE || last === undefined ? undefined : listing.readPage({ after: last.name, limit: MAX_PAGE_SIZE });
    },
    onLateFailure: (err) => logger?.error({ error: describeError(err) }, `${listing.what}: listing failed after it began; connection closed so the list cannot pass for complete`),
  });
}
