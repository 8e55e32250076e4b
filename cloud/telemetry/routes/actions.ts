/**
 * POST /executeAction: `{metric, buildingId, roomId, sensorId, action, arguments}` (the seed's
 * snake_case building_id, room_id, sensor_id are accepted too). The caller must pass CanEditDomains
 * over the building's domains; the device adapter does the rest. Nothing in the body can name where
 * the command goes: unknown fields (an endpoint, a url, a host) are refused.
 */
import { Router } from 'express';
import type { Logger } from 'pino';
import type { BuildingDirectory } from '../../../shared/directory.js';
import { HttpError, jsonBody } from '../../../shared/errors.js';
import { requireClaims } from '../../../shared/http.js';
import { NonEmptyString, describeValue } from '../../../shared/kinds.js';
import { DeviceCommandError, type DeviceAdapter, type DeviceCommand } from '../../../shared/devices/adapter.js';
import type { TelemetryMetrics } from '../metrics.js';
import { requireEdit } from './access.js';

const ALIASES: Record<string, keyof DeviceCommand> = {
  metric: 'metric',
  buildingId: 'buildingId',
  building_id: 'buildingId',
  roomId: 'roomId',
  room_id: 'roomId',
  sensorId: 'sensorId',
  sensor_id: 'sensorId',
  action: 'action',
  arguments: 'arguments',
};
const IDS: Array<keyof DeviceCommand> = ['metric', 'buildingId', 'roomId', 'sensorId', 'action'];

interface FieldProblem {
  field: string;
  message: string;
}

/** A command whose ids and fields are checked; its arguments are checked only once the caller may edit the building. */
type ShapedCommand = Omit<DeviceCommand, 'arguments'> & { arguments: unknown };

/**
 * Checks the command's shape: its fields and ids, which the permission check needs. The arguments are
 * the command's parameters, checked after the permission check ({@link argumentsOf}, then against the
 * action's declaration), so a caller who may not edit the building learns 403, not what is wrong with them.
 */
export function parseCommand(body: unknown): { ok: true; command: ShapedCommand } | { ok: false; errors: FieldProblem[] } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { ok: false, errors: [{ field: '(body)', message: `expected a JSON object, got ${describeValue(body)}` }] };
  const errors: FieldProblem[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const name = Object.prototype.hasOwnProperty.call(ALIASES, key) ? ALIASES[key] : undefined;
    if (!name) {
      errors.push({ field: key, message: 'not a command field; a command names a registered sensor, and the device address is never taken from the request' });
    } else if (name in out) {
      errors.push({ field: key, message: `given twice (as ${name} and its alias)` });
    } else {
      out[name] = value;
    }
  }
  for (const id of IDS) if (!NonEmptyString.is(out[id])) errors.push({ field: id, message: `expected a non-empty string, got ${describeValue(out[id])}` });
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, command: { ...(out as Omit<DeviceCommand, 'arguments'>), arguments: out.arguments } };
}

/** The named arguments of a command (none when absent), or the problem with them. */
export function argumentsOf(value: unknown): { ok: true; arguments: Record<string, unknown> } | { ok: false; errors: FieldProblem[] } {
  const args = value ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { ok: false, errors: [{ field: 'arguments', message: `expected an object of named arguments, got ${describeValue(args)}` }] };
  return { ok: true, arguments: args as Record<string, unknown> };
}

const OUTCOME: Record<DeviceCommandError['code'], string> = {
  unknown_metric: 'not_found',
  unknown_action: 'not_found',
  no_sensor: 'not_found',
  no_binding: 'not_found',
  invalid_arguments: 'invalid',
  bad_endpoint: 'bad_endpoint',
  device_rejected: 'device_rejected',
  device_unreachable: 'device_unreachable',
};

export function actionsRouter(deps: { directory: BuildingDirectory; devices: DeviceAdapter; metrics: TelemetryMetrics; logger: Logger }): Router {
  const router = Router();
  router.post('/executeAction', requireClaims(), jsonBody(), async (req, res) => {
    const parsed = parseCommand(req.body);
    if (!parsed.ok) {
      deps.metrics.actions.inc({ outcome: 'invalid' });
      throw new HttpError(400, 'invalid command', { errors: parsed.errors });
    }
    const shaped = parsed.command;
    try {
      await requireEdit(deps.directory, shaped.buildingId, req, res);
    } catch (err) {
      deps.metrics.actions.inc({ outcome: err instanceof HttpError && err.status === 403 ? 'forbidden' : 'lookup_failed' });
      throw err;
    }
    const args = argumentsOf(shaped.arguments);
    if (!args.ok) {
      deps.metrics.actions.inc({ outcome: 'invalid' });
      throw new HttpError(400, 'invalid command', { errors: args.errors });
    }
    const command: DeviceCommand = { ...shaped, arguments: args.arguments };
    try {
      res.json(await deps.devices.execute(command));
      deps.metrics.actions.inc({ outcome: 'accepted' });
    } catch (err) {
      if (!(err instanceof DeviceCommandError)) throw err;
      deps.metrics.actions.inc({ outcome: OUTCOME[err.code] });
      const where = { buildingId: command.buildingId, roomId: command.roomId, sensorId: command.sensorId, action: command.action, code: err.code };
      if (err.status >= 500) deps.logger.warn(where, 'device action failed');
      throw new HttpError(err.status, err.message, err.errors.length > 0 ? { errors: err.errors } : {});
    }
  });
  return router;
}
