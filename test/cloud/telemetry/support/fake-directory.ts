/**
 * A fake building directory: a real HTTP server on 127.0.0.1 port 0 answering GET /domain/{id} from a
 * table the test sets. Any other call answers 500 and is recorded in `unexpected`, which tests assert
 * is empty.
 */
import { createServer } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';

export interface FakeDirectory {
  url: string;
  /** Buildings asked for, with the claims header forwarded. */
  calls: Array<{ buildingId: string; claims: string | undefined }>;
  unexpected: string[];
  set(buildingId: string, answer: string[] | { status: number }): void;
}

export async function startFakeDirectory(t: { teardown(fn: () => unknown): void }): Promise<FakeDirectory> {
  const answers = new Map<string, string[] | { status: number }>();
  const calls: FakeDirectory['calls'] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
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
    if (!Array.isArray(answer)) {
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end('{"message":"failing on purpose"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { url: `http://127.0.0.1:${port}`, calls, unexpected, set: (id, answer) => void answers.set(id, answer) };
}
