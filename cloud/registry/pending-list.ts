/**
 * The provisioner's pending list, written as one JSON array a page at a time. Signup is open, so the
 * list can grow without bound; built whole, it would hold every row in memory, block the event loop
 * while it is serialised (stalling signup too), and past the longest string Node can hold, fail every
 * poll for good. Page by page, memory and each stretch of blocking are bounded by one page.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import { sendArrayInPages } from '../../shared/array-in-pages.js';
import type { RegistryStore } from './model.js';
import { organizationJson } from './wire.js';

/** Organizations read and written per step; 500 of the largest rows are a few MB of JSON. */
export const DEFAULT_PENDING_PAGE_SIZE = 500;

/**
 * Answers 200 with the JSON array of every pending organization, the same bytes `res.json` would
 * send for the whole list, a page at a time (see sendArrayInPages): the provisioner sees a broken
 * response, never a shorter list it could take for complete.
 */
export async function sendPendingList(res: Response, store: RegistryStore, pageSize: number, logger: Logger): Promise<void> {
  const first = await store.pendingOrganizations({ limit: pageSize });
  await sendArrayInPages(res, {
    first,
    elementsOf: (page) => page.organizations.map(organizationJson),
    after: (page) => (page.next === undefined ? undefined : store.pendingOrganizations({ after: page.next, limit: pageSize })),
    onLateFailure: (err) => logger.error({ error: describeError(err) }, 'pending list failed after it began; connection closed so the list cannot pass for complete'),
  });
}
