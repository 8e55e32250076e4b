/**
 * A fake building directory (an outside service): a real HTTP server on 127.0.0.1 port 0 answering
 * GET /domain/{buildingId} from the table it was given. Any other call answers 500 and is recorded in
 * `unexpected`, which tests assert is empty.
 */
import { createServer } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from '../../../support/stack.js';

export interface DirectoryCall {
  buildingId: string;
  claims: string | undefined;
}

export interface FakeDirectory {
  url: string;
  calls: DirectoryCall[];
  unexpected: string[];
}

export async function startFakeDirectory(t: Teardown, buildings: ReadonlyMap<string, string[]>): Promise<FakeDirectory> {
  const calls: DirectoryCall[] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
    const match = /^\/domain\/([^/?]+)$/.exec(req.url ?? '');
    const buildingId = match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const domains = buildingId === undefined ? undefined : buildings.get(buildingId);
    if (req.method !== 'GET' || buildingId === undefined || domains === undefined) {
      unexpected.push(`${req.method} ${req.url}`);
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"Internal Server Error","message":"unexpected call"}');
      return;
    }
    const claims = req.headers['x-gateway-claims'];
    calls.push({ buildingId, claims: typeof claims === 'string' ? claims : undefined });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(domains));
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
  });
  return { url: `http://127.0.0.1:${port}`, calls, unexpected };
}
