/**
 * A simulated SSH AP: a real ssh2 server on a loopback TCP port. Public-key auth with the building's
 * client key only; the dialect's command (with its interface) prints the stations the AP hears now;
 * any other command fails like a shell would. A reboot closes the listener and every connection.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server as TcpServer, type Socket } from 'node:net';
import ssh2, { type Connection, type ParsedKey } from 'ssh2';

// ssh2 is CommonJS: its named exports are not visible to Node's ESM loader
const { Server, utils } = ssh2;
import type { SshDialect } from '../poll/dialects.js';
import type { SshTarget, StationSighting } from '../poll/types.js';
import { sshOutput } from './render.js';

export class SimulatedSshEndpoint {
  private listener: TcpServer | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly clientKey: ParsedKey;

  constructor(
    readonly target: SshTarget,
    private readonly dialect: SshDialect,
    private readonly hostPrivateKey: string,
    clientPublicKey: string,
    private readonly ap: { name: string; mac: string },
    /** What the AP hears now; asked at each command, so an answer is always current. */
    private readonly stations: () => readonly StationSighting[],
  ) {
    const parsed = utils.parseKey(clientPublicKey);
    if (parsed instanceof Error) throw parsed;
    this.clientKey = parsed;
  }

  get listening(): boolean {
    return this.listener !== undefined;
  }

  /** The command lines this AP answers: the dialect command per configured interface. */
  private commands(): Map<string, string> {
    if (!this.dialect.command.includes('{if}')) return new Map([[this.dialect.command, '']]);
    const interfaces = (this.target.interface ?? this.dialect.defaultInterface ?? '').split(',').map((name) => name.trim()).filter(Boolean);
    return new Map(interfaces.map((iface) => [this.dialect.command.replaceAll('{if}', iface), iface]));
  }

  private accepts(ctx: { method: string; username: string; key?: { algo: string; data: Buffer }; signature?: Buffer; blob?: Buffer; hashAlgo?: string }): boolean {
    if (ctx.method !== 'publickey' || !ctx.key || ctx.username !== this.target.username) return false;
    const expected = this.clientKey.getPublicSSH();
    if (ctx.key.algo !== this.clientKey.type || ctx.key.data.length !== expected.length || !timingSafeEqual(ctx.key.data, expected)) return false;
    if (ctx.signature && ctx.blob) return this.clientKey.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true;
    return true;
  }

  private onConnection(client: Connection): void {
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (this.accepts(ctx as never)) ctx.accept();
      else ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('exec', (acceptExec, _reject, info) => {
          const stream = acceptExec();
          const iface = this.commands().get(info.command);
          if (iface === undefined) {
            stream.stderr.write(`sh: ${info.command.split(' ')[0] ?? ''}: not found\n`);
            stream.exit(127);
          } else {
            stream.write(sshOutput(this.dialect, this.stations(), { name: this.ap.name, mac: this.ap.mac, iface }));
            stream.exit(0);
          }
          stream.end();
        });
      });
    });
  }

  /** Listens on the target's port; resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.listener) return;
    const ssh = new Server({ hostKeys: [this.hostPrivateKey] }, (client) => this.onConnection(client));
    // our own TCP listener, so a reboot can cut every connection whatever state its SSH session is in
    const listener = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      ssh.injectSocket(socket);
    });
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(this.target.port, this.target.host, () => {
        listener.off('error', reject);
        resolve();
      });
    });
    listener.on('error', () => undefined);
    this.listener = listener;
  }

  /** Stops listening and drops every connection: the AP is gone until start(). */
  async stop(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    if (!listener) return;
    const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }
}
