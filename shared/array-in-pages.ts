/**
 * A JSON array answered a page at a time, for listings that grow without bound (the registry's pending
 * organizations, tenancy's public domains and subdomains: signup and domain creation are open). Built
 * whole, such a list held every row in memory, blocked the event loop while it was serialised, and past
 * the longest string V8 can hold, failed every call. Page by page, memory and each stretch of blocking
 * are bounded by one page, and the bytes are those `res.json` sends for the whole list.
 */
import type { Response } from 'express';

export interface ArrayPages<P> {
  /** The page read first, before anything is written: its failure is the caller's ordinary 500. */
  first: P;
  /** A page's elements, each as the JSON value it is written as. */
  elementsOf(page: P): readonly unknown[];
  /** Reads the page after `page`, or undefined when `page` is the last. */
  after(page: P): Promise<P> | undefined;
  /** Told of a page after the first that failed (log it): the answer is then broken off. */
  onLateFailure(err: unknown): void;
}

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

/**
 * Answers 200 with the JSON array of every page's elements, waiting while the client is slower than the
 * database. A failure on a page after the first, once the 200 and part of the array went out, destroys
 * the connection without the closing `]` or the final chunk: the client sees a broken response, never a
 * shorter list it could take for complete. When the client goes away, reading stops.
 *
 * @example
 * const first = await store.pendingOrganizations({ limit: 500 });
 * await sendArrayInPages(res, { first, elementsOf: (p) => p.organizations.map(organizationJson), after: (p) => …, onLateFailure: (err) => logger.error(…) });
 */
export async function sendArrayInPages<P>(res: Response, pages: ArrayPages<P>): Promise<void> {
  res.status(200).set('Content-Type', 'application/json; charset=utf-8');
  res.write('[');
  let separator = '';
  let page = pages.first;
  for (;;) {
    const json = pages.elementsOf(page).map((element) => JSON.stringify(element)).join(',');
    if (json !== '') {
      const more = res.write(separator + json);
      separator = ',';
      if (!more) await drained(res);
    }
    if (res.destroyed) return;
    const next = pages.after(page);
    if (next === undefined) break;
    try {
      page = await next;
    } catch (err) {
      pages.onLateFailure(err);
      res.destroy();
      return;
    }
    if (res.destroyed) return;
  }
  res.end(']');
}
