/**
 * The provisioner's pending list, written as one JSON array a page at a time. Signup is open, so the
 * list can grow without bound; built whole, it would hold every row in memory, block the event loop
 * while it is serialised (stalling signup too), and past the longest string Node can hold, fail every
 * poll for good. Page by page, memory and each stretch of blocking are bounded by one page.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import type { Organization, PendingCursor, RegistryStore } from './model.js';
import { organizationJson } from './wire.js';

/** Organizations read and written per step; 500 of the largest rows are a few MB of JSON. */
export const DEFAULT_PENDING_PAGE_SIZE = 500;

/** Resolves when the response can take more, or when the client went away (then `res.destroyed`). */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    // A write to a response already destroyed returns false, and neither event would come again.
    if (res.destroyed) {
      resolve();
      return;
    }
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** A page's elements of the array, with the comma that separates them from the page before. */
function elements(organizations: readonly Organization[], first: boolean): string {
  const json = organizations.map((org) => JSON.stringify(organizationJson(org))).join(',');
  return first || json === '' ? json : `,${json}`;
}

/**
 * Answers 200 with the JSON array of every pending organization, the same bytes `res.json` would
 * send for the whole list. The first page is read before anything is written, so its failure is an
 * ordinary 500. A failure on a later page, after the 200 and part of the array went out, destroys the
 * connection without the closing `]` or the final chunk: the provisioner sees a broken response, never
 * a shorter list it could take for complete. When the client goes away, reading stops.
 */
export async function sendPendingList(res: Response, store: RegistryStore, pageSize: number, logger: Logger): Promise<void> {
  let page = await store.pendingOrganizations({ limit: pageSize });
  res.status(200).set('Content-Type', 'application/json; charset=utf-8');
  res.write('[');
  let first = true;
  for (;;) {
    const chunk = elements(page.organizations, first);
    first &&= chunk === '';
    if (chunk !== '' && !res.write(chunk)) await drained(res);
    if (res.destroyed) return;
    const after: PendingCursor | undefined = page.next;
    if (after === undefined) break;
    try {
      page = await store.pendingOrganizations({ after, limit: pageSize });
    } catch (err) {
      logger.error({ error: describeError(err) }, 'pending list failed after it began; connection closed so the list cannot pass for complete');
      res.destroy();
      return;
    }
    if (res.destroyed) return;
  }
  res.end(']');
}
