/**
 * PostgreSQL `COPY … FROM STDIN` with the pg driver alone (pg-copy-streams is not a dependency): a
 * Submittable that sends the statement, answers CopyInResponse with CopyData chunks and CopyDone, and
 * resolves with the row count. This is the real COPY protocol, not multi-row INSERTs.
 */
import type pg from 'pg';

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyIn {
  readonly done: Promise<number>;
  private resolve!: (rows: number) => void;
  private reject!: (err: Error) => void;
  private rows = 0;

  constructor(
    private readonly text: string,
    private readonly chunks: readonly Buffer[],
  ) {
    this.done = new Promise<number>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    for (const chunk of this.chunks) connection.sendCopyFromChunk(chunk);
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.rows = Number(/COPY (\d+)/.exec(msg.text ?? '')?.[1] ?? 0);
  }

  handleReadyForQuery(): void {
    this.resolve(this.rows);
  }

  handleError(err: Error): void {
    this.reject(err);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs one COPY FROM STDIN with the given text-format chunks; resolves with the rows copied. */
export function copyFrom(client: pg.PoolClient | pg.Client, statement: string, chunks: readonly Buffer[]): Promise<number> {
  const copy = new CopyIn(statement, chunks);
  client.query(copy as unknown as pg.Submittable);
  return copy.done;
}

/** Escapes one value for COPY's text format. */
export function copyText(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}
