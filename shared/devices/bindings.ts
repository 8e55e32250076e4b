/**
 * Device bindings: how a device family (a driver) takes each action. They are data, shipped in
 * `firmware-bindings/devices/<driver>.json`, one file per driver, keyed by action name:
 *
 * ```json
 * { "setTarget": { "path": "/api/v1/thermostat/hold", "method": "POST", "fields": { "target": "holdTemp" }, "transport": "http" } }
 * ```
 *
 * A binding holds a path, never a host: the device URL is the registered sensor's endpoint followed by
 * the path. Keys starting with `$` (such as `$comment`) are notes for readers and are ignored.
 */
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { ActionSpec, MetricDeclaration } from '../catalog/declaration.js';
import { METRICS } from '../catalog/metrics.js';
import { describeValue } from '../kinds.js';

/** The HTTP methods a binding may use to carry a JSON command. */
export const BINDING_METHODS = ['POST', 'PUT', 'PATCH'] as const;
export type BindingMethod = (typeof BINDING_METHODS)[number];

/** How one action reaches one device family. */
export interface DeviceBinding {
  /** Appended to the sensor's endpoint. Starts with `/`; never a host. */
  path: string;
  method: BindingMethod;
  /** Action parameter name → device field name. May be empty. */
  fields: Readonly<Record<string, string>>;
  transport: 'http';
}

/** A driver's bindings, by action name. */
export type DriverBindings = Readonly<Record<string, DeviceBinding>>;

/** The global device catalog: every driver's bindings. */
export interface BindingCatalog {
  /** The bindings of a driver, or undefined for a driver the catalog does not know. */
  driver(name: string): DriverBindings | undefined;
  /** Every known driver name, sorted. */
  drivers(): string[];
}

/** A catalog file that does not describe valid bindings; `problems` names every one with its path. */
export class BindingCatalogError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid device bindings:\n  ${problems.join('\n  ')}`);
    this.name = 'BindingCatalogError';
    this.problems = problems;
  }
}

/** The folder shipped with the code: `firmware-bindings/devices/`. */
export const DEFAULT_BINDINGS_DIR = fileURLToPath(new URL('../../firmware-bindings/devices/', import.meta.url));

const DRIVER_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
const DEVICE_FIELD = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Why a device field name is refused, or undefined. `__proto__` matches the name rule, but JavaScript
 * code (ours, or the device's own JSON handling) that sets it on an object changes the object's
 * prototype instead of adding a field, so the value would be lost without a word. Other built-in
 * names (`constructor`, `toString`, …) become plain fields when set, and are accepted.
 */
function deviceFieldProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || !DEVICE_FIELD.test(value)) return `expected a device field name of letters, digits, "_", "." or "-", got ${describeValue(value)}`;
  if (value === '__proto__') return '"__proto__" cannot be a device field name: JavaScript treats it as the object\'s prototype, not a field, so the value would silently not be sent';
  return undefined;
}
const BINDING_KEYS = new Set(['path', 'method', 'fields', 'transport']);

/** Every action any metric declares, by name (a driver serves one metric family, whichever it is). */
function declaredActions(metrics: Readonly<Record<string, MetricDeclaration>>): Map<string, ActionSpec[]> {
  const byName = new Map<string, ActionSpec[]>();
  for (const metric of Object.values(metrics)) {
    for (const action of metric.actions) byName.set(action.name, [...(byName.get(action.name) ?? []), action]);
  }
  return byName;
}

/**
 * Why a binding path is unsafe or malformed, or undefined when it is a plain absolute path. A path that
 * could change the host (`//evil`, `\\evil`, `@evil`) or climb out of the endpoint (`..`) is refused.
 */
export function pathProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return `expected a path starting with "/", got ${describeValue(value)}`;
  if (!value.startsWith('/') || value.startsWith('//')) return `expected a path starting with a single "/", got ${describeValue(value)}`;
  if (/[\s\\@#]/.test(value) || [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return `a path may not hold whitespace, control characters, "\\", "@" or "#", got ${describeValue(value)}`;
  }
  const pathname = value.split('?')[0] ?? '';
  if (pathname.split('/').some((segment) => segment === '..' || segment === '.' || /%2e/i.test(segment) || /%2f/i.test(segment))) {
    return `a path may not hold "." or ".." segments or encoded slashes, got ${describeValue(value)}`;
  }
  return undefined;
}

/**
 * Checks one driver's file content and returns its bindings, or every problem found, each prefixed by
 * `where` (usually the file name) and the key path.
 *
 * @example
 * parseDriverBindings('acme.json', { setTarget: { path: '/sp', fields: { target: 'sp' } } });
 * // { ok: true, bindings: { setTarget: { path: '/sp', method: 'POST', fields: { target: 'sp' }, transport: 'http' } } }
 * parseDriverBindings('acme.json', { fly: { path: 'x' } });
 * // { ok: false, problems: ['acme.json: fly: not an action any metric declares', 'acme.json: fly.path: expected a path …'] }
 */
export function parseDriverBindings(
  where: string,
  content: unknown,
  metrics: Readonly<Record<string, MetricDeclaration>> = METRICS,
): { ok: true; bindings: DriverBindings } | { ok: false; problems: string[] } {
  if (content === null || typeof content !== 'object' || Array.isArray(content)) {
    return { ok: false, problems: [`${where}: expected an object keyed by action name, got ${describeValue(content)}`] };
  }
  const actions = declaredActions(metrics);
  const problems: string[] = [];
  const bindings: Record<string, DeviceBinding> = {};
  for (const [action, raw] of Object.entries(content as Record<string, unknown>)) {
    if (action.startsWith('$')) continue;
    const at = `${where}: ${action}`;
    const specs = actions.get(action);
    if (!specs) problems.push(`${at}: not an action any metric declares (known: ${[...actions.keys()].join(', ')})`);
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`${at}: expected an object with path, method, fields, transport, got ${describeValue(raw)}`);
      continue;
    }
    const entry = raw as Record<string, unknown>;
    for (const key of Object.keys(entry)) if (!BINDING_KEYS.has(key)) problems.push(`${at}.${key}: not a binding key (path, method, fields, transport)`);
    const badPath = pathProblem(entry.path);
    if (badPath) problems.push(`${at}.path: ${badPath}`);
    const method = entry.method ?? 'POST';
    if (!BINDING_METHODS.includes(method as BindingMethod)) problems.push(`${at}.method: expected one of ${BINDING_METHODS.join(', ')}, got ${describeValue(method)}`);
    const transport = entry.transport ?? 'http';
    if (transport !== 'http') problems.push(`${at}.transport: expected "http", got ${describeValue(transport)}`);
    const fields = entry.fields ?? {};
    const renamed: Record<string, string> = {};
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
      problems.push(`${at}.fields: expected an object of parameter → device field, got ${describeValue(fields)}`);
    } else {
      const parameters = new Set((specs ?? []).flatMap((s) => s.parameters.map((p) => p.name)));
      for (const [parameter, deviceField] of Object.entries(fields as Record<string, unknown>)) {
        if (specs && !parameters.has(parameter)) problems.push(`${at}.fields.${parameter}: not a parameter of ${action} (parameters: ${[...parameters].join(', ') || 'none'})`);
        const badField = deviceFieldProblem(deviceField);
        if (badField) problems.push(`${at}.fields.${parameter}: ${badField}`);
        else renamed[parameter] = deviceField as string;
      }
      const required = (specs ?? []).flatMap((s) => s.parameters.filter((p) => p.required).map((p) => p.name));
      for (const name of new Set(required)) {
        if (!(name in renamed)) problems.push(`${at}.fields: the required parameter ${name} has no device field`);
      }
    }
    bindings[action] = { path: entry.path as string, method: method as BindingMethod, fields: Object.freeze(renamed), transport: 'http' };
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, bindings: Object.freeze(bindings) };
}

/**
 * Builds a catalog from driver name → file content, checking every driver. Throws
 * {@link BindingCatalogError} naming every problem at once.
 *
 * @example
 * const catalog = bindingCatalogFrom({ 'acme-stat': { setTarget: { path: '/sp', fields: { target: 'sp' } } } });
 * catalog.driver('acme-stat')?.setTarget?.path; // '/sp'
 */
export function bindingCatalogFrom(
  files: Readonly<Record<string, unknown>>,
  metrics: Readonly<Record<string, MetricDeclaration>> = METRICS,
): BindingCatalog {
  const problems: string[] = [];
  const drivers = new Map<string, DriverBindings>();
  for (const [driver, content] of Object.entries(files)) {
    if (!DRIVER_NAME.test(driver)) {
      problems.push(`${driver}: a driver name is 1 to 64 of a-z, 0-9 and "-", starting with a letter or digit`);
      continue;
    }
    const parsed = parseDriverBindings(`${driver}.json`, content, metrics);
    if (parsed.ok) drivers.set(driver, parsed.bindings);
    else problems.push(...parsed.problems);
  }
  if (problems.length > 0) throw new BindingCatalogError(problems);
  return {
    driver: (name) => drivers.get(name),
    drivers: () => [...drivers.keys()].sort(),
  };
}

/**
 * Reads every `<driver>.json` of a folder (default: the shipped `firmware-bindings/devices/`) into a
 * catalog, failing at start with every problem listed rather than at the first command.
 *
 * @example
 * const catalog = await loadBindingCatalog();
 * catalog.drivers(); // ['ecobee-local-thermostat', 'honeywell-lcc-thermostat', 'zigbee-rest-thermostat']
 */
export async function loadBindingCatalog(dir: string = DEFAULT_BINDINGS_DIR): Promise<BindingCatalog> {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  const files: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of names) {
    const text = await readFile(path.join(dir, name), 'utf8');
    try {
      files[name.slice(0, -'.json'.length)] = JSON.parse(text);
    } catch {
      problems.push(`${name}: not valid JSON`);
    }
  }
  if (problems.length > 0) throw new BindingCatalogError(problems);
  return bindingCatalogFrom(files);
}

/**
 * A sensor's capability: the actions its metric declares that its driver also binds, in the metric's
 * order. A driver the catalog does not know gives none.
 *
 * @example
 * capabilitiesOf(temperature, catalog.driver('honeywell-lcc-thermostat')); // ['setTarget']
 */
export function capabilitiesOf(metric: MetricDeclaration, bindings: DriverBindings | undefined): ActionSpec[] {
  if (!bindings) return [];
  return metric.actions.filter((action) => Object.prototype.hasOwnProperty.call(bindings, action.name));
}
