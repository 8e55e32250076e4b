/**
 * Types for the parts of net-snmp (a CommonJS package without its own typings) that Lintel uses:
 * the command generator (client sessions) and the agent (for the simulated building).
 */
declare module 'net-snmp' {
  import type { Socket } from 'node:dgram';

  namespace snmp {
    type OidValue = number | string | boolean | Buffer | null;

    interface Varbind {
      oid: string;
      type: number;
      value: OidValue;
    }

    interface User {
      name: string;
      level: number;
      authProtocol?: string;
      authKey?: string;
      privProtocol?: string;
      privKey?: string;
    }

    interface SessionOptions {
      port?: number;
      retries?: number;
      timeout?: number;
      backoff?: number;
      transport?: 'udp4' | 'udp6';
      version?: number;
      backwardsGetNexts?: boolean;
      reportOidMismatchErrors?: boolean;
      idBitsSize?: 16 | 32;
      context?: string;
      /** Lets the caller create (and so guard) the session's UDP socket. */
      dgramModule?: { createSocket(type: 'udp4' | 'udp6'): Socket };
    }

    interface Session {
      get(oids: string[], callback: (error: Error | null, varbinds?: Varbind[]) => void): void;
      subtree(
        oid: string,
        maxRepetitions: number,
        feedCallback: (varbinds: Varbind[]) => boolean | void,
        doneCallback: (error: Error | null) => void,
      ): void;
      walk(
        oid: string,
        maxRepetitions: number,
        feedCallback: (varbinds: Varbind[]) => boolean | void,
        doneCallback: (error: Error | null) => void,
      ): void;
      close(): void;
      on(event: 'error', listener: (error: Error) => void): this;
      on(event: 'close', listener: () => void): this;
    }

    interface TableColumn {
      number: number;
      name: string;
      type: number;
      maxAccess: number;
    }

    interface TableIndexEntry {
      columnName: string;
      implied?: boolean;
      length?: number;
    }

    interface TableProvider {
      name: string;
      type: number;
      oid: string;
      maxAccess: number;
      tableColumns: TableColumn[];
      tableIndex: TableIndexEntry[];
    }

    interface Mib {
      registerProvider(provider: TableProvider): void;
      unregisterProvider(name: string): void;
      addTableRow(table: string, row: OidValue[]): void;
      deleteTableRow(table: string, rowIndex: OidValue[]): void;
    }

    interface Authorizer {
      addCommunity(community: string): void;
      deleteCommunity(community: string): void;
      addUser(user: User): void;
    }

    interface AgentOptions {
      port?: number;
      address?: string | null;
      transport?: 'udp4' | 'udp6';
      disableAuthorization?: boolean;
      engineID?: string;
      /** Lets the caller create (and so observe) the agent's UDP sockets. */
      dgramModule?: { createSocket(type: 'udp4' | 'udp6'): Socket };
    }

    interface Agent {
      getAuthorizer(): Authorizer;
      getMib(): Mib;
      close(callback?: () => void): void;
    }

    const Version1: number;
    const Version2c: number;
    const Version3: number;
    const SecurityLevel: { noAuthNoPriv: number; authNoPriv: number; authPriv: number };
    const AuthProtocols: Record<'md5' | 'sha' | 'sha224' | 'sha256' | 'sha384' | 'sha512', string>;
    const PrivProtocols: Record<'des' | 'aes' | 'aes256b' | 'aes256r', string>;
    const ObjectType: Record<string, number>;
    /** The `code` of a ResponseInvalidError, by name (ECommunityNoMatch, EAuthFailure, …). */
    const ResponseInvalidCode: Record<string, number>;
    const MibProviderType: { Scalar: number; Table: number };
    const MaxAccess: Record<string, number>;

    function createSession(target: string, community: string, options?: SessionOptions): Session;
    function createV3Session(target: string, user: User, options?: SessionOptions): Session;
    function isVarbindError(varbind: Varbind): boolean;
    function varbindError(varbind: Varbind): string;
    function createMib(): Mib;
    function createAgent(
      options: AgentOptions,
      callback: (error: Error | null, data?: unknown) => void,
      mib?: Mib,
    ): Agent;
  }
  export = snmp;
}
