/**
 * The conversation routes: create, list, get, rename, delete. Every lookup is by id and the caller's
 * `sub` together, so another user's id, a deleted id and a malformed id all answer the same 404.
 */
import express, { type Request, type Router } from 'express';
import { HttpError } from '../../shared/errors.js';
import { callerOf } from '../../shared/http.js';
import { LockAbandonedError, LockTimeoutError } from './conversation-lock.js';
import { DEFAULT_TITLE } from './conversation.js';
import { CONVERSATION_NOT_FOUND, STOPPING } from './send-message.js';
import { InvalidCursorError, type ConversationStore } from './store.js';
import { conversationIdOf, conversationWire, createBodyOf, listQueryOf, renameBodyOf, summaryWire } from './wire.js';

/** Largest page a client may ask for with `?limit=`; without it, the list is whole. */
export const LIST_MAX_LIMIT = 500;

/** Header carrying the cursor of the next list page, when a page was asked for and more remain. */
export const NEXT_CURSOR_HEADER = 'x-next-cursor';

/**
 * The Location of a conversation `req` created: a reference relative to the URL the client posted to,
 * so it resolves under whatever prefix the client used. An ingress that strips `/chat` leaves the
 * service seeing `/conversations`, so a path built from what the service sees would lead outside the
 * prefix. With a trailing slash (`/conversations/`) the id alone is relative to the collection.
 */
function locationOf(req: Request, id: string): string {
  const path = req.originalUrl.split('?', 1)[0] ?? '';
  return path.endsWith('/') ? id : `conversations/${id}`;
}

/** Whether a request carries body bytes: a length above 0, or chunks. */
const carriesBody = (req: Request): boolean => req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;

export function conversationsRouter(store: ConversationStore, now: () => Date): Router {
  const router = express.Router();

  const idOf = (raw: unknown): string => {
    const id = conversationIdOf(raw);
    if (!id) throw new HttpError(404, CONVERSATION_NOT_FOUND);
    return id;
  };

  router.post('/', async (req, res) => {
    // A body the JSON parser left unread (another content type) is not an absent body: its title would be lost.
    if (req.body === undefined && carriesBody(req)) throw new HttpError(400, 'body: expected JSON with content-type application/json');
    const { title } = createBodyOf(req.body);
    const conversation = await store.create(callerOf(res).sub, title ?? DEFAULT_TITLE, now());
    res.status(201).location(locationOf(req, conversation.id)).json(conversationWire(conversation));
  });

  router.get('/', async (req, res) => {
    const query = listQueryOf(req.query as Record<string, unknown>, LIST_MAX_LIMIT);
    try {
      const page = await store.list(callerOf(res).sub, query);
      if (page.next !== undefined) res.set(NEXT_CURSOR_HEADER, page.next);
      res.json(page.conversations.map(summaryWire));
    } catch (err) {
      if (err instanceof InvalidCursorError) throw new HttpError(400, err.message);
      throw err;
    }
  });

  router.get('/:id', async (req, res) => {
    const conversation = await store.get(idOf(req.params.id), callerOf(res).sub);
    if (!conversation) throw new HttpError(404, CONVERSATION_NOT_FOUND);
    res.json(conversationWire(conversation));
  });

  router.patch('/:id', async (req, res) => {
    const id = idOf(req.params.id);
    const { title } = renameBodyOf(req.body);
    let renamed;
    try {
      renamed = await store.rename(id, callerOf(res).sub, title, now());
    } catch (err) {
      if (err instanceof LockTimeoutError) throw new HttpError(409, 'conversation is busy; try the rename again');
      if (err instanceof LockAbandonedError) throw new HttpError(503, STOPPING);
      throw err;
    }
    if (!renamed) throw new HttpError(404, CONVERSATION_NOT_FOUND);
    res.json(summaryWire(renamed));
  });

  router.delete('/:id', async (req, res) => {
    let removed;
    try {
      removed = await store.remove(idOf(req.params.id), callerOf(res).sub);
    } catch (err) {
      if (err instanceof LockTimeoutError) throw new HttpError(409, 'conversation is busy; try the delete again');
      if (err instanceof LockAbandonedError) throw new HttpError(503, STOPPING);
      throw err;
    }
    if (!removed) throw new HttpError(404, CONVERSATION_NOT_FOUND);
    res.status(204).end();
  });

  return router;
}
