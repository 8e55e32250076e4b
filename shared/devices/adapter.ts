/**
 * The device adapter: runs one action on one registered sensor. The cloud's POST /executeAction and
 * the edge's local actions share it. The caller has already checked that the caller may edit the
 * building; the adapter does the rest, in this order:
 *
 * 1. validate the named arguments with the ingest field check (unknown metric or action: 404, bad
 *    arguments: 400);
 * 2. resolve the sensor, then its driver's bindings, then the action's binding (none: 404);
 * 3. rename the arguments to the device's field names;
 * 4. check the endpoint's scheme: only http and https (otherwise 500, with a deliberately vague message);
 * 5. send JSON (`{}` when there are no fields) with a timeout that covers connecting too, following no
 *    redirect, through the given dispatcher (a service's own bounds its device host lookups: `dispatcher.ts`);
 * 6. a 2xx reply is accepted; any other reply, or no reply, is 502. The device's own status and body
 *    are never passed on.
 *
 * The device URL comes only from the registered sensor's endpoint and the shipped binding path, never
 * from the command, so a caller cannot aim a request anywhere (no SSRF).
 */
import { request, type Dispatcher } from 'undici';
import { untilAbortedRequest } from '../abort.js';
import { validateActionArguments, type FieldError } from '../catalog/validate.js';
import type { BindingCatalog, DeviceBinding } from './bindings.js';

/** A sensor as registered for a building: where its device is reachable, and in which dialect. */
export interface RegisteredSensor {
  sensorId: string;
  buildingId: string;
  roomId: string;
  metric: string;
  /** The device family, the name of a `firmware-bindings/devices/<driver>.json`. */
  driver: string;
  /** Where the unit is reachable, e.g. `http://10.0.4.21:8089`. */
  endpoint: string;
}

/** Finds registered sensors (the cloud reads its sensors table; the edge its own configuration). */
export interface SensorLookup {
  sensorOf(buildingId: string, roomId: string, sensorId: string): Promise<RegisteredSensor | undefined>;
}

/** One command: the seed's metric, building_id, room_id, sensor_id, action and named arguments. */
export interface DeviceCommand {
  metric: string;
  buildingId: string;
  roomId: string;
  sensorId: string;
  action: string;
  arguments: Readonly<Record<string, unknown>>;
}

export type DeviceErrorCode =
  | 'unknown_metric'
  | 'unknown_action'
  | 'invalid_arguments'
  | 'no_sensor'
  | 'no_binding'
  | 'bad_endpoint'
  | 'device_rejected'
  | 'device_unreachable';

const STATUS_OF: Record<DeviceErrorCode, 400 | 404 | 500 | 502> = {
  unknown_metric: 404,
  unknown_action: 404,
  invalid_arguments: 400,
  no_sensor: 404,
  no_binding: 404,
  bad_endpoint: 500,
  device_rejected: 502,
  device_unreachable: 502,
};

/**
 * A command that did not reach the device, with the HTTP status to answer. The message is safe to show
 * the caller: it never carries the endpoint, the device's status or the device's body.
 */
export class DeviceCommandError extends Error {
  readonly code: DeviceErrorCode;
  readonly status: 400 | 404 | 500 | 502;
  readonly errors: FieldError[];
  constructor(code: DeviceErrorCode, message: string, errors: FieldError[] = []) {
    super(message);
    this.name = 'DeviceCommandError';
    this.code = code;
    this.status = STATUS_OF[code];
    this.errors = errors;
  }
}

/** The request a command becomes: where, how, and the JSON body. */
export interface DeviceRequest {
  /** Never carries credentials: those of the endpoint are in {@link DeviceRequest.authorization}. */
  url: string;
  method: DeviceBinding['method'];
  body: Record<string, unknown>;
  /** `Basic …` from a registered endpoint's user and password (http://user:pass@host), when it has them. */
  authorization?: string;
}

/**
 * Builds the device request from a sensor's endpoint and a binding: the endpoint followed by the
 * binding path, with the arguments renamed to device fields (arguments the binding does not map, and
 * optional ones given as null, are not sent). Throws `bad_endpoint` for anything but an http or https
 * endpoint, a URL that would leave the endpoint's origin, or credentials that are not valid
 * percent-encoding.
 *
 * @example
 * planDeviceRequest('http://10.0.4.21:8089', { path: '/hold', method: 'POST', fields: { target: 'holdTemp' }, transport: 'http' }, { target: 21.5 });
 * // { url: 'http://10.0.4.21:8089/hold', method: 'POST', body: { holdTemp: 21.5 } }
 */
export function planDeviceRequest(endpoint: string, binding: DeviceBinding, args: Readonly<Record<string, unknown>>): DeviceRequest {
  let base: URL;
  try {
    base = new URL(endpoint);
  } catch {
    throw new DeviceCommandError('bad_endpoint', 'the device command could not be sent');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new DeviceCommandError('bad_endpoint', 'the device command could not be sent');
  }
  // Trimmed by index, not with /\/+$/: that backtracks quadratically over a long run of inner slashes,
  // which a registered endpoint may hold, and would block the service while planning one command.
  let end = base.pathname.length;
  while (end > 0 && base.pathname[end - 1] === '/') end--;
  const target = new URL(`${base.origin}${base.pathname.slice(0, end)}${binding.path}`);
  if (target.origin !== base.origin) throw new DeviceCommandError('bad_endpoint', 'the device command could not be sent');
  // Built as entries, not by assignment: `body['__proto__'] = v` would set the prototype and send `{}`.
  // The catalog refuses that field name; a binding built by hand does not pass that check.
  const body: Record<string, unknown> = Object.fromEntries(
    Object.entries(binding.fields)
      // The field check lets an optional argument be null, meaning not given: the device gets no field.
      .filter(([parameter]) => args[parameter] !== undefined && args[parameter] !== null)
      .map(([parameter, deviceField]) => [deviceField, args[parameter]]),
  );
  const plan: DeviceRequest = { url: target.toString(), method: binding.method, body };
  // Credentials in a registered endpoint (http://user:pass@host) go as a header: undici ignores them in a URL.
  if (base.username !== '' || base.password !== '') {
    let userPass: string;
    try {
      userPass = `${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`;
    } catch {
      throw new DeviceCommandError('bad_endpoint', 'the device command could not be sent');
    }
    plan.authorization = `Basic ${Buffer.from(userPass, 'utf8').toString('base64')}`;
  }
  return plan;
}

/** The whole-request timeout towards a device, connecting included, unless told otherwise. */
export const DEFAULT_DEVICE_TIMEOUT_MS = 5000;

export interface DeviceAdapterOptions {
  catalog: BindingCatalog;
  sensors: SensorLookup;
  /** Whole-request timeout towards a device, connecting included. Default {@link DEFAULT_DEVICE_TIMEOUT_MS}. */
  timeoutMs?: number;
  /**
   * Where the requests go out. A long-running service passes its own `createDeviceDispatcher()` (`dispatcher.ts`),
   * whose device host lookups are bounded; without one, undici's global dispatcher (fine for a one-shot
   * command such as the edge's `action`).
   */
  dispatcher?: Dispatcher;
}

export interface DeviceAdapter {
  /** Resolves `{accepted: true}` once a device answered 2xx; rejects with {@link DeviceCommandError}. */
  execute(command: DeviceCommand): Promise<{ accepted: true }>;
}

/**
 * Creates the adapter.
 *
 * @example
 * const devices = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors, dispatcher: createDeviceDispatcher() });
 * await devices.execute({ metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 21 } });
 * // { accepted: true }: the command reached the device; the new value arrives later as a reading
 */
export function createDeviceAdapter(options: DeviceAdapterOptions): DeviceAdapter {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DEVICE_TIMEOUT_MS;

  async function send(plan: DeviceRequest): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    const pending = request(plan.url, {
      method: plan.method,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(plan.authorization ? { authorization: plan.authorization } : {}) },
      body: JSON.stringify(plan.body),
      signal,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    let response: Dispatcher.ResponseData;
    try {
      // A reply that still lands after the timeout is drained, so its connection is not left hanging.
      response = await untilAbortedRequest(pending, signal);
    } catch {
      throw new DeviceCommandError('device_unreachable', 'the device could not be reached');
    }
    // The reply's content is the device's business; read and drop it so the connection is reused.
    await response.body.dump().catch(() => undefined);
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new DeviceCommandError('device_rejected', 'the device did not accept the command');
    }
  }

  return {
    async execute(command) {
      const checked = validateActionArguments(command.metric, command.action, command.arguments);
      if (!checked.ok) throw new DeviceCommandError(checked.reason, checked.message, checked.errors);
      const sensor = await options.sensors.sensorOf(command.buildingId, command.roomId, command.sensorId);
      if (!sensor || sensor.metric !== checked.metric.key) {
        throw new DeviceCommandError('no_sensor', `no ${checked.metric.key} sensor ${JSON.stringify(command.sensorId)} in room ${JSON.stringify(command.roomId)} of building ${JSON.stringify(command.buildingId)}`);
      }
      const driver = options.catalog.driver(sensor.driver);
      const binding = driver && Object.prototype.hasOwnProperty.call(driver, checked.action.name) ? driver[checked.action.name] : undefined;
      if (!binding) {
        throw new DeviceCommandError('no_binding', `sensor ${JSON.stringify(sensor.sensorId)} (driver ${JSON.stringify(sensor.driver)}) has no binding for ${checked.action.name}`);
      }
      await send(planDeviceRequest(sensor.endpoint, binding, command.arguments));
      return { accepted: true };
    },
  };
}
