/** What an exchange writes through: pg's connection, whose socket it corks around its messages. */
export interface ExchangeConnection {
  stream: { cork?: () => void; uncork?: () => void };
}

/**
 * One round trip of the PostgreSQL protocol driven by hand on a pg client (`client.query(exchange)`, pg's
 * Submittable): the messages `send` writes, all in one socket write, then the server's answers until
 * it is ready again. It keeps the command tag of every statement and the data row of the statement at
 * `rowsOf` (0-based), and resolves with `result()` once the server is ready, or rejects with the first
 * error. Answers a subclass does not handle are ignored.
 */
export abstract class Exchange<T, Connection extends ExchangeConnection> {
  readonly done: Promise<T>;
  private resolve!: (value: T) => void;
  private reject!: (err: Error) => void;
  private failed = false;
  /** The command tag of each statement completed so far (`COPY 500`, `INSERT 0 3`, `COMMIT`, …). */
  protected readonly tags: string[] = [];
  protected row: Array<string | null> | undefined;

  constructor(private readonly rowsOf = -1) {
    this.done = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** Writes the exchange's messages; they leave in one socket write (each would wake the server). */
  submit(connection: Connection): void {
    connection.stream.cork?.();
    try {
      this.send(connection);
    } finally {
      connection.stream.uncork?.();
    }
  }

  protected abstract send(connection: Connection): void;
  protected abstract result(): T;

  handleDataRow(msg: { fields: Array<string | null> }): void {
    if (this.tags.length === this.rowsOf) this.row = msg.fields;
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.tags.push(msg.text ?? '');
  }

  handleReadyForQuery(): void {
    if (this.failed) return;
    try {
      this.resolve(this.result());
    } catch (err) {
      this.reject(err as Error);
    }
  }

  handleError(err: Error): void {
    this.failed = true;
    this.reject(err);
  }

  handleCopyInResponse(_connection: Connection): void {}
  handleRowDescription(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}
