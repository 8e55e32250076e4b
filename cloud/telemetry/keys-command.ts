/**
 * The ingest-key management commands behind `keys-cli.ts`: parse the command line (every problem at
 * once), then run one command against the key store. A new key must name the buildings it may write;
 * `bind` confines an existing key, including one made before keys named buildings (which may write any).
 */
import { parseArgs } from 'node:util';
import { KEY_ID } from '../../shared/hmac.js';
import { checkBuildingList } from './domain/building-scope.js';
import type { ListedIngestKey } from './store/ingest-keys.js';

export const USAGE = `usage: keys-cli.ts add <keyId> --building <buildingId> [--building <buildingId> …] [note]
       keys-cli.ts bind <keyId> --building <buildingId> [--building <buildingId> …]
       keys-cli.ts revoke <keyId>
       keys-cli.ts list`;

export type KeysCommand =
  | { name: 'add'; keyId: string; buildingIds: string[]; note?: string }
  | { name: 'bind'; keyId: string; buildingIds: string[] }
  | { name: 'revoke'; keyId: string }
  | { name: 'list' };

export type ParsedKeysCommand = { ok: true; command: KeysCommand } | { ok: false; problems: string[] };

/** Positional arguments after the command name: the key id, and for `add` an optional note. */
const MAX_ARGUMENTS = { add: 2, bind: 1, revoke: 1, list: 0 } as const;
type CommandName = keyof typeof MAX_ARGUMENTS;
const isCommandName = (name: string | undefined): name is CommandName => name !== undefined && Object.hasOwn(MAX_ARGUMENTS, name);

/**
 * Parses `keys-cli.ts` arguments.
 *
 * @example
 * parseKeysCommand(['add', 'gw-lisbon-01', '--building', 'b-lisbon', 'Lisbon HQ']);
 * // { ok: true, command: { name: 'add', keyId: 'gw-lisbon-01', buildingIds: ['b-lisbon'], note: 'Lisbon HQ' } }
 */
export function parseKeysCommand(argv: readonly string[]): ParsedKeysCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: { building: { type: 'string', short: 'b', multiple: true } }, allowPositionals: true, strict: true });
  } catch (err) {
    return { ok: false, problems: [(err as Error).message] };
  }
  const [name, ...rest] = parsed.positionals;
  if (!isCommandName(name)) {
    return { ok: false, problems: [name === undefined ? 'expected a command: add, bind, revoke or list' : `unknown command ${JSON.stringify(name)}; expected add, bind, revoke or list`] };
  }
  const problems: string[] = [];
  const buildings = parsed.values.building;
  if (rest.length > MAX_ARGUMENTS[name]) {
    problems.push(`${name}: unexpected argument ${JSON.stringify(rest[MAX_ARGUMENTS[name]])}${name === 'add' ? ' (quote a note of several words)' : ''}`);
  }
  if (name === 'list') {
    if (buildings) problems.push('--building: only add and bind take buildings');
    return problems.length > 0 ? { ok: false, problems } : { ok: true, command: { name } };
  }
  const keyId = rest[0];
  if (keyId === undefined) problems.push(`${name}: expected a key id`);
  else if (!KEY_ID.test(keyId)) problems.push(`keyId: a key id is 1 to 128 of letters, digits, ".", "_", ":" and "-", got ${JSON.stringify(keyId)}`);
  if (name === 'revoke') {
    if (buildings) problems.push('--building: only add and bind take buildings');
    return problems.length > 0 ? { ok: false, problems } : { ok: true, command: { name, keyId: keyId! } };
  }
  let buildingIds: string[] = [];
  if (!buildings) {
    problems.push(`--building: ${name === 'add' ? 'a new key' : 'bind'} must name the buildings the key may write, once per building (--building <buildingId>)`);
  } else {
    const checked = checkBuildingList(buildings, '--building');
    if (checked.ok) buildingIds = checked.buildingIds;
    else problems.push(...checked.problems);
  }
  if (problems.length > 0) return { ok: false, problems };
  const note = rest[1];
  return { ok: true, command: name === 'add' ? { name, keyId: keyId!, buildingIds, ...(note !== undefined ? { note } : {}) } : { name, keyId: keyId!, buildingIds } };
}

/** What the commands need: the key store, the registered buildings (for a typo warning), and output. */
export interface KeysCommandPorts {
  keys: {
    add(keyId: string, buildingIds: readonly string[], note?: string): Promise<string>;
    bind(keyId: string, buildingIds: readonly string[]): Promise<boolean>;
    revoke(keyId: string): Promise<boolean>;
    list(): Promise<ListedIngestKey[]>;
  };
  buildings: { unregistered(buildingIds: readonly string[]): Promise<string[]> };
  out(text: string): void;
  err(text: string): void;
}

const ANY_BUILDING = 'any building (unbound)';

function buildingsText(buildingIds: readonly string[] | null): string {
  if (buildingIds === null) return ANY_BUILDING;
  return buildingIds.length === 0 ? 'no building' : buildingIds.join(',');
}

/** Runs a parsed command; resolves with the exit code (0 done, 1 refused). */
export async function runKeysCommand(command: KeysCommand, ports: KeysCommandPorts): Promise<number> {
  const { keys, out, err } = ports;
  const warnUnregistered = async (buildingIds: readonly string[]) => {
    for (const id of await ports.buildings.unregistered(buildingIds)) {
      err(`warning: building ${JSON.stringify(id)} has not been registered with telemetry yet; the key may write it, but check the id\n`);
    }
  };
  try {
    switch (command.name) {
      case 'add': {
        const secret = await keys.add(command.keyId, command.buildingIds, command.note);
        out(`key id: ${command.keyId}\nsecret: ${secret}\nbuildings: ${buildingsText(command.buildingIds)}\n`);
        err('Store the secret on the gateway now; it is not shown again.\n');
        await warnUnregistered(command.buildingIds);
        return 0;
      }
      case 'bind': {
        if (!(await keys.bind(command.keyId, command.buildingIds))) {
          err(`no active key ${command.keyId}\n`);
          return 1;
        }
        out(`${command.keyId} may write: ${buildingsText(command.buildingIds)} (a running service applies it within 30 s)\n`);
        await warnUnregistered(command.buildingIds);
        return 0;
      }
      case 'revoke': {
        if (!(await keys.revoke(command.keyId))) {
          err(`no active key ${command.keyId}\n`);
          return 1;
        }
        out(`revoked ${command.keyId}\n`);
        return 0;
      }
      case 'list': {
        const listed = await keys.list();
        for (const key of listed) {
          const status = key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active';
          out(`${key.keyId}\t${status}\t${key.createdAt.toISOString()}\t${key.note ?? ''}\t${buildingsText(key.buildingIds)}\n`);
        }
        const unbound = listed.filter((k) => k.buildingIds === null && !k.revokedAt).map((k) => k.keyId);
        if (unbound.length > 0) {
          err(
            `warning: ${unbound.length} active key(s) may write any building, as every key could before keys named buildings: ${unbound.join(', ')}\n` +
              'Confine each to its gateway\'s buildings: keys-cli.ts bind <keyId> --building <buildingId> [--building …]\n',
          );
        }
        return 0;
      }
    }
  } catch (error) {
    // Our own refusals carry no code and say what to do; a database error's text may hold SQL.
    err(`${error instanceof Error && !('code' in error) ? error.message : 'the database refused the command'}\n`);
    return 1;
  }
}
