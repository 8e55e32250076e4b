/**
 * `lintel-edge action`: drive a configured building device locally.
 *   lintel-edge action --config <file> --list
 *   lintel-edge action --config <file> --sensor <id> --action <name> [--arg name=value ...]
 * A 0 exit means the device accepted the command, not that it applied it: the new value comes back as
 * an ordinary reading.
 */
import { DeviceCommandError } from '../../../shared/devices/adapter.js';
import { BindingCatalogError, loadBindingCatalog, type BindingCatalog } from '../../../shared/devices/bindings.js';
import { createLocalDevices, unknownDrivers } from '../actions/index.js';

/** Device command errors that are the caller's mistake: exit 2, as any bad usage. */
const USAGE_CODES: ReadonlySet<DeviceCommandError['code']> = new Set(['no_sensor', 'unknown_metric', 'unknown_action', 'invalid_arguments', 'no_binding']);
import { loadCheckedConfig, type CommandIo } from './common.js';

export interface ActionOptions {
  config: string;
  list: boolean;
  sensor?: string;
  action?: string;
  /** `name=value` pairs; numbers are sent as numbers. */
  args: string[];
}

/** The shipped device bindings, or undefined after printing every problem in them. */
export async function loadShippedBindings(io: CommandIo): Promise<BindingCatalog | undefined> {
  try {
    return await loadBindingCatalog();
  } catch (err) {
    if (err instanceof BindingCatalogError) {
      io.err(`lintel-edge: ${err.message}\n`);
      return undefined;
    }
    throw err;
  }
}

const PLAIN_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/**
 * `name=value` pairs to an argument map; a plain decimal (21, -0.5) becomes a number. Refused, so that
 * what is sent is what was meant: a name given twice (which would win?), and a value JavaScript would
 * read as a number though it is not written as a plain decimal (0x15 is 21, 1e3 is 1000, " 21" is 21).
 */
export function parseActionArgs(pairs: readonly string[]): { ok: true; args: Record<string, unknown> } | { ok: false; message: string } {
  const args = new Map<string, unknown>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return { ok: false, message: `--arg: expected name=value, got ${JSON.stringify(pair)}` };
    const name = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    if (args.has(name)) return { ok: false, message: `--arg: ${JSON.stringify(name)} is given more than once; give each argument once` };
    if (PLAIN_DECIMAL.test(raw)) args.set(name, Number(raw));
    else if (raw.trim() !== '' && Number.isFinite(Number(raw))) {
      return { ok: false, message: `--arg ${name}: expected a number written as a plain decimal (e.g. 21 or -0.5), got ${JSON.stringify(raw)}` };
    } else args.set(name, raw);
  }
  return { ok: true, args: Object.fromEntries(args) };
}

export async function actionCommand(options: ActionOptions, io: CommandIo): Promise<number> {
  const loaded = loadCheckedConfig(options.config, undefined, io);
  if (!loaded) return 2;
  const catalog = await loadShippedBindings(io);
  if (!catalog) return 2;
  const { config } = loaded;
  const unknown = unknownDrivers(config.sensors, catalog);
  if (unknown.length > 0) {
    io.err(`lintel-edge: invalid configuration in ${options.config}:\n  ${unknown.join('\n  ')}\n`);
    return 2;
  }
  const devices = createLocalDevices(config.sensors, catalog);
  if (options.list) {
    if (config.sensors.length === 0) io.out('no sensors configured (add a sensors: list to the config)\n');
    for (const { sensor, actions } of devices.list()) {
      const can = actions.map((a) => `${a.name}(${a.parameters.map((p) => `${p.name}${p.required ? '' : '?'}`).join(', ')})`).join(' ');
      io.out(`${sensor.sensorId}  ${sensor.metric} in ${sensor.roomId}  driver ${sensor.driver}  actions: ${can || 'none'}\n`);
    }
    return 0;
  }
  if (!options.sensor || !options.action) {
    io.err('lintel-edge: action needs --sensor <id> and --action <name> (or --list)\n');
    return 2;
  }
  const parsed = parseActionArgs(options.args);
  if (!parsed.ok) {
    io.err(`lintel-edge: ${parsed.message}\n`);
    return 2;
  }
  try {
    const { sensor } = await devices.execute(options.sensor, options.action, parsed.args);
    io.out(`accepted: ${options.action} on ${sensor.sensorId} (${sensor.metric} in ${sensor.roomId}); the device reports the new value as a reading\n`);
    return 0;
  } catch (err) {
    if (err instanceof DeviceCommandError) {
      const details = err.errors.map((e) => `\n  ${e.field}: ${e.message}`).join('');
      io.err(`lintel-edge: ${err.code}: ${err.message}${details}\n`);
      // A command that names what is not there, or arguments that do not fit, is bad usage (2); a
      // device that refused or could not be reached, or a bad endpoint in the config, is a failed check (1).
      return USAGE_CODES.has(err.code) ? 2 : 1;
    }
    throw err;
  }
}
