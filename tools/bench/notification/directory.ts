/**
 * The building directory for the benchmark, in its own process so that its work is not counted against
 * the service: `GET /domain/bench-b{n}` answers `["bench-domain-{n mod 10}"]`. Prints its port.
 */
import { createServer } from 'node:http';
import { listen } from '../../../shared/lifecycle.js';

const server = createServer((req, res) => {
  const building = /^\/domain\/bench-b(\d+)$/.exec(req.url ?? '')?.[1];
  if (building === undefined) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"unknown building"}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([`bench-domain-${Number(building) % 10}`]));
});
const port = await listen(server, 0, '127.0.0.1');
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.once('SIGTERM', () => server.close(() => process.exit(0)));
