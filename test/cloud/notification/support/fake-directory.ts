/**
 * A fake building directory: a real HTTP server on 127.0.0.1 answering `GET /domain/{building}` with the
 * domain names it was given. A building set to `hang` never answers, until `dropHanging()` cuts the call.
 * A call for a building nobody set up, or any other route, answers 500, is recorded in `unexpected`, and
 * fails the test at teardown when started with {@link startFakeDirectory}.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CLAIMS_HEADER } from '../../../../shared/claims.js';
import { listen } from '../../../../shared/lifecycle.js';

export type DirectoryAnswer = string[] | 'hang' | { status: number };

export class FakeDirectory {
  readonly calls: Array<{ buildingId: string; claims: string | undefined }> = [];
  readonly unexpected: string[] = [];
  private readonly answers = new Map<string, DirectoryAnswer>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly server: Server;
  private port = 0;

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  set(buildingId: string, answer: DirectoryAnswer): this {
    this.answers.set(buildingId, answer);
    return this;
  }

  callsFor(buildingId: string): number {
    return this.calls.filter((c) => c.buildingId === buildingId).length;
  }

  /** Throws when the fake got a call it was not set up for. */
  verify(): void {
    if (this.unexpected.length > 0) {
      throw new Error(`the fake directory got ${this.unexpected.length} call(s) it was not set up for: ${this.unexpected.join(' | ')}`);
    }
  }

  async start(): Promise<this> {
    this.port = await listen(this.server, 0, '127.0.0.1');
    return this;
  }

  /**
   * Cuts every call left hanging, as a directory that went away would: the caller's lookup fails as
   * unreachable at once instead of waiting out its timeout. Calls made later still hang.
   */
  dropHanging(): void {
    for (const res of this.hanging) res.destroy();
  }

  async stop(): Promise<void> {
    this.dropHanging();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const match = /^\/domain\/([^/?]+)$/.exec(req.url ?? '');
    const buildingId = match?.[1] !== undefined ? decodeURIComponent(match[1]) : undefined;
    const answer = buildingId !== undefined && req.method === 'GET' ? this.answers.get(buildingId) : undefined;
    if (buildingId === undefined || answer === undefined) {
      this.unexpected.push(`${req.method} ${req.url}`);
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"unexpected call"}');
      return;
    }
    const claims = req.headers[CLAIMS_HEADER];
    this.calls.push({ buildingId, claims: Array.isArray(claims) ? claims[0] : claims });
    if (answer === 'hang') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if (!Array.isArray(answer)) {
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end('{"message":"failure"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }
}

/**
 * A started fake directory, stopped at teardown and then verified (see {@link FakeDirectory.verify}). A
 * test that makes a call it was not set up for on purpose asserts on `unexpected` and empties it.
 *
 * Start it before anything else the test cleans up: tap runs teardowns last-registered first, and one
 * that throws skips those still to run, so the check must come last.
 *
 * @example
 * const directory = await startFakeDirectory(t);
 * directory.set('b1', ['acme']);
 */
export async function startFakeDirectory(t: { teardown(fn: () => unknown): void }): Promise<FakeDirectory> {
  const directory = new FakeDirectory();
  t.teardown(() => directory.verify());
  await directory.start();
  t.teardown(() => directory.stop());
  return directory;
}
