/**
 * A fake building directory (an outside service): a real HTTP server on 127.0.0.1 port 0 answering
 * GET /domain/{id} from a table the test sets. Anything it was not set up for answers 500, is recorded in
 * `unexpected`, and fails the test at teardown. Used by the relay, telemetry and browser tests.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen } from '../../shared/lifecycle.js';

/** What the directory does for one building. */
export type DirectoryAnswer = string[] | { status: number } | 'hang';

export interface DirectoryCall {
  buildingId: string;
  claims: string | undefined;
}

export interface FakeDirectory {
  url: string;
  calls: DirectoryCall[];
  unexpected: string[];
  set(buildingId: string, answer: DirectoryAnswer): void;
  callsFor(buildingId: string): number;
}

/**
 * Starts the fake directory; it closes at teardown, dropping any request left hanging, and then fails
 * the test if it got any call it was not set up for (a route other than `GET /domain/{id}`, or a building
 * nobody `set`). A test that makes such a call on purpose asserts on `unexpected` and empties it.
 *
 * Start it before anything else the test cleans up: tap runs teardowns last-registered first, and one
 * that throws skips those still to run, so the check must come last.
 *
 * @example
 * const directory = await startFakeDirectory(t);
 * directory.set('b1', ['acme']);
 */
export async function startFakeDirectory(t: { teardown(fn: () => unknown): void }): Promise<FakeDirectory> {
  const answers = new Map<string, DirectoryAnswer>();
  const calls: DirectoryCall[] = [];
  const unexpected: string[] = [];
  // Registered before the close below, so it runs after it: a call that lands during teardown counts too.
  t.teardown(() => {
    if (unexpected.length > 0) {
      throw new Error(`the fake directory got ${unexpected.length} call(s) it was not set up for: ${unexpected.join(' | ')}`);
    }
  });
  const hanging = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const match = /^\/domain\/([^/?]+)$/.exec(req.url ?? '');
    const buildingId = match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const answer = buildingId === undefined ? undefined : answers.get(buildingId);
    if (req.method !== 'GET' || buildingId === undefined || answer === undefined) {
      unexpected.push(`${req.method} ${req.url}`);
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"Internal Server Error","message":"unexpected call"}');
      return;
    }
    const claims = req.headers['x-gateway-claims'];
    calls.push({ buildingId, claims: typeof claims === 'string' ? claims : undefined });
    if (answer === 'hang') {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if (!Array.isArray(answer)) {
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end('{"type":"Internal Server Error","message":"failing on purpose"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const res of hanging) res.destroy();
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    unexpected,
    set: (buildingId, answer) => void answers.set(buildingId, answer),
    callsFor: (buildingId) => calls.filter((c) => c.buildingId === buildingId).length,
  };
}
