/**
 * POST /executeAction: `{metric, buildingId, roomId, sensorId, action, arguments}` (the seed's
 * snake_case building_id, room_id, sensor_id are accepted too). The caller must pass CanEditDomains
 * over the building's domains; the device adapter does the rest. Nothing in the body can name where
 * the command goes: unknown fields (an endpoint, a url, a host) are refused.
 */
import { Router } from 'express';
import type { Logger } from 'pino';
import type { BuildingDirectory } from '../../../shared/directory.js';
import { HttpError, MAX_REPORTED_PROBLEMS, jsonBody, reportedProblems, unknownKeyProblems } from '../../../shared/errors.js';
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

/** A command whose ids and fields are checked; its arguments are the kernel's to check. */
type ShapedCommand = Omit<DeviceCommand, 'arguments'> & { arguments: unknown };

const NOT_A_COMMAND_FIELD = 'not a command field; a command names a registered sensor, and the device address is never taken from the request';

/**
 * Checks the command's shape: its fields and ids, which the permission check needs. The arguments are
 * the command's parameters, checked after the permission check by the kernel (after it has found the
 * metric and the action), so a caller who may not edit the building learns 403, not what is wrong with them.
 */
export function parseCommand(body: unknown): { ok: true; command: ShapedCommand } | { ok: false; errors: FieldProblem[] } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { ok: false, errors: [{ field: '(body)', message: `expected a JSON object, got ${describeValue(body)}` }] };
  const errors: FieldProblem[] = [];
  const unknownKeys: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const name = Object.prototype.hasOwnProperty.call(ALIASES, key) ? ALIASES[key] : undefined;
    if (!name) {
      unknownKeys.push(key);
    } else if (name in out) {
      errors.push({ field: key, message: `given twice (as ${name} and its alias)` });
    } else {
      out[name] = value;
    }
  }
  const unknown = unknownKeyProblems(unknownKeys, (key) => key);
  errors.push(...unknown.problems.map((field) => ({ field, message: NOT_A_COMMAND_FIELD })));
  for (const id of IDS) if (!NonEmptyString.is(out[id])) errors.push({ field: id, message: `expected a non-empty string, got ${describeValue(out[id])}` });
  if (errors.length > 0) return { ok: false, errors: reportedFieldProblems(errors, unknown.notListed) };
  return { ok: true, command: { ...(out as Omit<DeviceCommand, 'arguments'>), arguments: out.arguments } };
}

/**
 * The problems a 400 lists, as {@link reportedProblems} has them: the first MAX_REPORTED_PROBLEMS,
 * then one saying how many more there were (those cut here, plus `notListed` never described). A body
 * of thousands of unknown keys gets a short answer, never a larger one.
 */
function reportedFieldProblems(problems: readonly FieldProblem[], notListed = 0): FieldProblem[] {
  const shown = problems.slice(0, MAX_REPORTED_PROBLEMS);
  const [more] = reportedProblems([], problems.length - shown.length + notListed);
  return more === undefined ? shown : [...shown, { field: '(more)', message: more }];
}

/**
 * The kernel's argument problems as a 400 lists them. An undeclared argument's field is a key the
 * caller sent, so it is cut like any unknown key ({@link unknownKeyProblems}) and the list is capped.
 */
function reportedArgumentProblems(errors: readonly FieldProblem[]): FieldProblem[] {
  const fields = unknownKeyProblems(errors.map((e) => e.field), (field) => field);
  return reportedFieldProblems(fields.problems.map((field, i) => ({ field, message: errors[i]!.message })), fields.notListed);
}

/**
 * The named arguments as the kernel is handed them: none only when the field is absent, otherwise as
 * sent. A value that is not an object goes through too, `null` included: the kernel refuses it (400)
 * only after finding the metric and the action, so an unknown metric or action is 404 whatever the
 * arguments, as the seed orders the checks.
 */
function argumentsOf(value: unknown): DeviceCommand['arguments'] {
  return (value === undefined ? {} : value) as DeviceCommand['arguments'];
}

/** The problem with arguments that are not an object (the kernel's refusal names no field), or none. */
function notAnObjectProblems(value: unknown): FieldProblem[] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return [];
  return [{ field: 'arguments', message: `expected an object of named arguments, got ${describeValue(value)}` }];
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
    const command: DeviceCommand = { ...shaped, arguments: argumentsOf(shaped.arguments) };
    try {
      res.json(await deps.devices.execute(command));
      deps.metrics.actions.inc({ outcome: 'accepted' });
    } catch (err) {
      if (!(err instanceof DeviceCommandError)) {
        // Not the device's answer: the registered sensor could not be looked up (PostgreSQL down), a 500.
        deps.metrics.actions.inc({ outcome: 'lookup_failed' });
        throw err;
      }
      deps.metrics.actions.inc({ outcome: OUTCOME[err.code] });
      const where = { buildingId: command.buildingId, roomId: command.roomId, sensorId: command.sensorId, action: command.action, code: err.code };
      if (err.status >= 500) deps.logger.warn(where, 'device action failed');
      const errors = err.code === 'invalid_arguments' && err.errors.length === 0 ? notAnObjectProblems(command.arguments) : reportedArgumentProblems(err.errors);
      throw new HttpError(err.status, err.message, errors.length > 0 ? { errors } : {});
    }
  });
  return router;
}
