/**
 * A building directory on loopback that answers `domains` for every building it was given: a `held`
 * building's first call only after `release`, an `answered` one at once as often as asked. Any other
 * call (a building it was not given, or a second call for a held one) is recorded and fails the test at
 * teardown.
 */
import { createServer, type ServerResponse } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from './relay-harness.js';

export async function holdingDirectory(t: Teardown, buildings: { held: string[]; answered: string[]; domains: string[] }) {
  /** Every building asked for and answered or held, in order. */
  const calls: string[] = [];
  const unexpected: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(buildings.domains));
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the directory got calls it was not set up for: ${unexpected.slice(0, 5).join(' | ')}`);
  });
  const server = createServer((req, res) => {
    const buildingId = decodeURIComponent(/^\/domain\/([^/?]+)$/.exec(req.url ?? '')?.[1] ?? '');
    if (req.method === 'GET' && buildings.held.includes(buildingId) && !calls.includes(buildingId)) {
      calls.push(buildingId);
      return void released.then(() => answer(res));
    }
    if (req.method === 'GET' && buildings.answered.includes(buildingId)) {
      calls.push(buildingId);
      return void answer(res);
    }
    unexpected.push(`${req.method} ${req.url}`);
    res.writeHead(500).end('unexpected call');
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
  });
  return { url: `http://127.0.0.1:${port}`, calls, unexpected, release };
}
