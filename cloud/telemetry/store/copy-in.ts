/**
 * PostgreSQL `COPY … FROM STDIN` with the pg driver alone: a Submittable that sends one simple-query
 * message, its CopyData chunks and CopyDone in one socket write, and resolves with the command tag of
 * every statement of the message once the server is ready again. The message may hold other
 * statements after the COPY (PostgreSQL runs them once the copy is done; an error discards the rest of
 * the message). This is the real COPY protocol, not multi-row INSERTs.
 *
 * The data does not wait for the server's CopyInResponse: the server reads its socket in order, so the
 * copy reads the data already sent, and it drops CopyData and CopyDone that arrive where no copy is in
 * progress (the protocol says so: a COPY that failed, or a message that never reached its COPY). That
 * saves a round trip and two socket writes a copy, each of which wakes the other side.
 */
import type pg from 'pg';
import { Exchange, type ExchangeConnection } from './pg-exchange.js';

interface CopyConnection extends ExchangeConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyIn extends Exchange<string[], CopyConnection> {
  constructor(
    private readonly text: string,
    private readonly chunks: readonly Buffer[],
  ) {
    super();
  }

  protected send(connection: CopyConnection): void {
    connection.query(this.text);
    for (const chunk of this.chunks) connection.sendCopyFromChunk(chunk);
    connection.endCopyFrom();
  }

  protected result(): string[] {
    return this.tags;
  }
}

/**
 * Sends `text` (a COPY FROM STDIN, possibly followed by more statements) as one simple-query message
 * and streams the text-format chunks as the copy data. Resolves with each statement's command tag
 * (`COPY 500`, `INSERT 0 3`, `COMMIT`, …), in order.
 */
export function copyIn(client: pg.PoolClient | pg.Client, text: string, chunks: readonly Buffer[]): Promise<string[]> {
  const copy = new CopyIn(text, chunks);
  client.query(copy as unknown as pg.Submittable);
  return copy.done;
}

/** Runs one COPY FROM STDIN with the given text-format chunks; resolves with the rows copied. */
export async function copyFrom(client: pg.PoolClient | pg.Client, statement: string, chunks: readonly Buffer[]): Promise<number> {
  const [tag] = await copyIn(client, statement, chunks);
  return Number(/^COPY (\d+)/.exec(tag ?? '')?.[1] ?? 0);
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;

/** Escapes one value for COPY's text format. */
export function copyText(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}
