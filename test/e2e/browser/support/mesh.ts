/**
 * A loopback stand-in for the service mesh at ingress (seed 000, "Authentication"): it reads the
 * `authentication_token` cookie, drops any `x-gateway-claims` the client sent, and injects the claims
 * the test decided for that token. A request without the cookie passes without claims (the service
 * rejects it); a token the mesh does not know is refused with 401 here, as a verifying mesh would.
 *
 * It proxies plain HTTP (streamed both ways, so SSE passes chunk by chunk) and WebSocket upgrades
 * (the raw sockets piped after the rewritten request head).
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from '../../../support/stack.js';

export const AUTH_COOKIE = 'authentication_token';
const CLAIMS_HEADER = 'x-gateway-claims';

export interface MeshRoute {
  /** Path prefix, e.g. `/socket.io/` or `/chat/`. */
  prefix: string;
  /** Base URL of the upstream service. */
  upstream: string;
}

export interface MeshOptions {
  /** `authentication_token` value → the `x-gateway-claims` value the mesh injects for it. */
  tokens: ReadonlyMap<string, string>;
  /** First matching prefix wins. */
  routes: MeshRoute[];
  /** Requests no route matches, served by the ingress itself (e.g. the frontend's files). Default 404. */
  fallback?: RequestListener;
}

/** What the mesh did with one proxied request. */
export interface MeshRecord {
  kind: 'http' | 'upgrade';
  method: string;
  path: string;
  /** The cookie's token, when the request carried one. */
  token: string | undefined;
  /** The client sent its own x-gateway-claims, which the mesh dropped. */
  clientClaimsDropped: boolean;
  /** The claims the mesh injected, or undefined when it forwarded none. */
  injected: string | undefined;
  outcome: 'forwarded' | 'refused';
}

export interface Mesh {
  url: string;
  records: MeshRecord[];
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

interface Decision {
  record: MeshRecord;
  /** Request headers to send upstream, as raw name/value pairs. */
  headers: Array<[string, string]>;
}

function decide(kind: MeshRecord['kind'], req: IncomingMessage, tokens: ReadonlyMap<string, string>): Decision {
  const headers: Array<[string, string]> = [];
  let clientClaimsDropped = false;
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
    if (name.toLowerCase() === CLAIMS_HEADER) clientClaimsDropped = true;
    else headers.push([name, value]);
  }
  const token = cookieValue(req.headers.cookie, AUTH_COOKIE);
  const injected = token === undefined ? undefined : tokens.get(token);
  if (injected !== undefined) headers.push([CLAIMS_HEADER, injected]);
  const outcome = token !== undefined && injected === undefined ? 'refused' : 'forwarded';
  return { record: { kind, method: req.method ?? 'GET', path: req.url ?? '/', token, clientClaimsDropped, injected, outcome }, headers };
}

/** Hop-by-hop headers belong to one connection; a proxy does not pass them on. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer'];

function withoutHopByHop<T extends Record<string, unknown>>(headers: T): T {
  for (const name of HOP_BY_HOP) delete headers[name];
  return headers;
}

function routeOf(routes: MeshRoute[], path: string): URL | undefined {
  const route = routes.find((r) => path.startsWith(r.prefix));
  return route === undefined ? undefined : new URL(route.upstream);
}

/** Starts the mesh on 127.0.0.1 port 0; closed (with every piped socket) at teardown. */
export async function startMesh(t: Teardown, options: MeshOptions): Promise<Mesh> {
  const records: MeshRecord[] = [];
  const open = new Set<Duplex>();
  const agent = new Agent({ keepAlive: false });
  const track = (socket: Duplex) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const upstream = routeOf(options.routes, req.url ?? '/');
    if (upstream === undefined) {
      if (options.fallback) options.fallback(req, res);
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"Not Found","message":"no route"}');
      return;
    }
    const { record, headers } = decide('http', req, options.tokens);
    records.push(record);
    if (record.outcome === 'refused') {
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"type":"Unauthorized","message":"invalid token"}');
      return;
    }
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: withoutHopByHop(Object.fromEntries(headers.map(([n, v]) => [n.toLowerCase(), v]))), agent },
      (answer) => {
        // Node frames the body again towards the browser (chunked when there is no length).
        res.writeHead(answer.statusCode ?? 502, withoutHopByHop({ ...answer.headers }));
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end('{"type":"Bad Gateway","message":"upstream failed"}');
      else res.destroy();
    });
    // The browser went away: so does the upstream request, as with a real proxy.
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.pipe(forward);
  });

  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    client.on('error', () => client.destroy());
    const upstream = routeOf(options.routes, req.url ?? '/');
    if (upstream === undefined) {
      client.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const { record, headers } = decide('upgrade', req, options.tokens);
    records.push(record);
    if (record.outcome === 'refused') {
      client.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const server: Socket = connect(Number(upstream.port), upstream.hostname);
    track(server);
    server.on('error', () => {
      server.destroy();
      client.destroy();
    });
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
    server.once('connect', () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`, ...headers.map(([name, value]) => `${name}: ${value}`)];
      server.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) server.write(head);
      client.pipe(server).pipe(client);
    });
  });

  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const socket of open) socket.destroy();
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
    agent.destroy();
  });
  return { url: `http://127.0.0.1:${port}`, records };
}
