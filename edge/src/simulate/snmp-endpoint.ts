/**
 * A simulated SNMP AP (or controller): a real net-snmp agent on a loopback UDP port, serving the
 * dialect's station table (and a controller's AP status table, when the dialect has one) from MIB table
 * providers that are rebuilt on every step. A reboot closes the socket (the AP answers nothing) and
 * re-opens it on the same port with the same MIB.
 */
import { createSocket, type Socket } from 'node:dgram';
import snmp from 'net-snmp';
import type { ApStatusTableSpec, SnmpDialect } from '../poll/dialects.js';
import type { SnmpTarget } from '../poll/types.js';
import { apStatusRows, rebootingApStatus, snmpRows, type HeardStation, type JoinedAp, type SnmpRow } from './render.js';

/** The row index as one implied OID column, so any index layout (MACs, slots, ifIndex) is served as given. */
const INDEX_COLUMN = 9999;

type Columns = Map<number, { name: string; type: number }>;

/** One table the agent serves, and the row indexes in the MIB now. */
interface ServedTable {
  provider: snmp.TableProvider;
  rows: Set<string>;
}

function tableProvider(name: string, oid: string, columns: Columns): snmp.TableProvider {
  return {
    name,
    type: snmp.MibProviderType.Table,
    oid,
    maxAccess: snmp.MaxAccess['not-accessible'] as number,
    tableColumns: [
      { number: INDEX_COLUMN, name: 'rowIndex', type: snmp.ObjectType.OID as number, maxAccess: snmp.MaxAccess['not-accessible'] as number },
      ...[...columns]
        .sort(([a], [b]) => a - b)
        .map(([number, column]) => ({ number, name: column.name, type: column.type, maxAccess: snmp.MaxAccess['read-only'] as number })),
    ],
    tableIndex: [{ columnName: 'rowIndex', implied: true }],
  };
}

export class SimulatedSnmpEndpoint {
  private agent: snmp.Agent | undefined;
  private readonly mib: snmp.Mib;
  private readonly stations: ServedTable;
  private readonly apStatus: (ServedTable & { spec: ApStatusTableSpec; rebootingStatus: number }) | undefined;

  constructor(
    readonly target: SnmpTarget,
    private readonly dialect: SnmpDialect,
    private readonly engineID: string,
  ) {
    this.mib = snmp.createMib();
    const table = dialect.tables[0];
    if (!table) throw new RangeError(`dialect ${dialect.name} has no table`);
    const columns: Columns = new Map();
    columns.set(table.signal.column, { name: table.signal.name, type: snmp.ObjectType.Integer as number });
    if ('column' in table.station) columns.set(table.station.column, { name: table.station.name, type: snmp.ObjectType.OctetString as number });
    if (table.apIdentity && 'column' in table.apIdentity) {
      columns.set(table.apIdentity.column, { name: table.apIdentity.name, type: snmp.ObjectType.OctetString as number });
    }
    if (table.lastHeard) columns.set(table.lastHeard.column, { name: table.lastHeard.name, type: snmp.ObjectType.Counter32 as number });
    this.stations = { provider: tableProvider('stations', table.oid, columns), rows: new Set() };
    this.mib.registerProvider(this.stations.provider);

    const status = dialect.apStatus;
    if (status) {
      const statusColumns: Columns = new Map([
        [status.apIdentity.column, { name: status.apIdentity.name, type: snmp.ObjectType.OctetString as number }],
        [status.status.column, { name: status.status.name, type: snmp.ObjectType.Integer as number }],
      ]);
      const provider = tableProvider('apStatus', status.oid, statusColumns);
      this.apStatus = { provider, rows: new Set(), spec: status, rebootingStatus: rebootingApStatus(dialect.name, status) };
      this.mib.registerProvider(this.apStatus.provider);
    }
  }

  get listening(): boolean {
    return this.agent !== undefined;
  }

  /**
   * Replaces the served tables: the stations heard, and (for a controller with an AP status table) the
   * state of every AP joined to it. Departed rows are deleted, the others (re)written.
   */
  update(stations: readonly HeardStation[], joined: readonly JoinedAp[] = []): void {
    const table = this.dialect.tables[0];
    if (table) this.replaceRows(this.stations, snmpRows(table, this.dialect.signal, stations));
    if (this.apStatus) this.replaceRows(this.apStatus, apStatusRows(this.apStatus.spec, joined, this.apStatus.rebootingStatus));
  }

  private replaceRows(table: ServedTable, rows: readonly SnmpRow[]): void {
    const name = table.provider.name;
    const next = new Set(rows.map((row) => row.index));
    // row by row: net-snmp cannot unregister a table provider that holds a single column
    for (const index of table.rows) if (!next.has(index)) this.mib.deleteTableRow(name, [index]);
    const columns = table.provider.tableColumns.slice(1).map((column) => column.number);
    for (const row of rows) this.mib.addTableRow(name, [row.index, ...columns.map((column) => row.cells.get(column) ?? 0)]);
    table.rows = next;
  }

  /** Binds the agent to the target's port; resolves once it listens. */
  async start(): Promise<void> {
    if (this.agent) return;
    let socket: Socket | undefined;
    const agent = snmp.createAgent(
      {
        port: this.target.port,
        address: this.target.host,
        engineID: this.engineID,
        dgramModule: {
          createSocket: (type) => {
            socket = createSocket(type);
            return socket;
          },
        },
      },
      // requests with a wrong community or user land here: a real AP ignores them too
      () => undefined,
      this.mib,
    );
    const authorizer = agent.getAuthorizer();
    if (this.target.version === '3' && this.target.user) {
      authorizer.addUser({
        name: this.target.user,
        level: this.target.privKey ? snmp.SecurityLevel.authPriv : this.target.authKey ? snmp.SecurityLevel.authNoPriv : snmp.SecurityLevel.noAuthNoPriv,
        authProtocol: snmp.AuthProtocols[this.target.authProtocol ?? 'sha'],
        authKey: this.target.authKey,
        privProtocol: snmp.PrivProtocols[this.target.privProtocol ?? 'aes'],
        privKey: this.target.privKey,
      });
    } else if (this.target.community) {
      authorizer.addCommunity(this.target.community);
    }
    await new Promise<void>((resolve, reject) => {
      if (!socket) return reject(new Error('the SNMP agent created no socket'));
      socket.once('listening', () => resolve());
      socket.once('error', (error) => {
        agent.close();
        reject(error);
      });
    });
    this.agent = agent;
  }

  /** Closes the socket: from now on the AP answers nothing. */
  async stop(): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    if (!agent) return;
    await new Promise<void>((resolve) => agent.close(() => resolve()));
  }
}
