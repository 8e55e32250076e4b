/**
 * The text forms of a valid reading, made in one pass over its declared fields: the browser view as
 * JSON (the message on `telemetry:raw` and on `telemetry:filtered:{buildingId}`) and the stored row,
 * whose payload is already JSON text for COPY. Both read the same value texts, so a reading is
 * serialised once instead of once per consumer.
 *
 * The message is exactly `JSON.stringify(declaredView(metric, reading))` and the payload exactly the
 * JSON of the row's payload object (tests hold both against the general functions): a validated
 * reading holds strings, finite numbers and nulls only, and for those `String(number)` and
 * `JSON.stringify(number)` agree.
 */
import type { MetricDeclaration } from '../../../shared/catalog/declaration.js';
import { declaredView } from '../../../shared/catalog/validate.js';
import { METRICS } from '../../../shared/catalog/metrics.js';
import type { ReadingRow, ValidReading } from './batch.js';

/** A valid reading, serialised for storage and for the live channels. */
export interface EncodedReading {
  buildingId: string;
  /** The browser view as JSON: `type`, then every declared field present, in declaration order. */
  message: string;
  row: ReadingRow;
}

/** Fields stored in columns of their own, never in the payload. */
const COLUMN_FIELDS = new Set(['type', 'buildingId', 'roomId', 'timestamp']);

/** The key of a zoneTransition's origin in the payload (migration 0005 generates from_room_id from it). */
const ORIGIN_FIELD = 'fromRoomId';

interface FieldPlan {
  name: string;
  /** `"name":`, as JSON writes the key. */
  key: string;
  inPayload: boolean;
}

interface MetricPlan {
  /** `{"type":"<key>"`: the start of every message of the metric. */
  head: string;
  fields: FieldPlan[];
  /** The origin is a payload field of this metric. */
  origin: boolean;
  /** A declared field named `type` would replace the view's own `type`: such a metric takes the general path. */
  general: boolean;
}

function planOf(metric: MetricDeclaration): MetricPlan {
  const fields = metric.fields.map((f) => ({
    name: f.name,
    key: `${JSON.stringify(f.name)}:`,
    inPayload: !COLUMN_FIELDS.has(f.name) && f.name !== metric.value_field,
  }));
  return {
    head: `{"type":${JSON.stringify(metric.key)}`,
    fields,
    origin: fields.some((f) => f.inPayload && f.name === ORIGIN_FIELD),
    general: metric.fields.some((f) => f.name === 'type'),
  };
}

/** The catalog's plans, made once; a declaration from elsewhere (a test's) is planned when met. */
const PLANS: ReadonlyMap<MetricDeclaration, MetricPlan> = new Map(Object.values(METRICS).map((m) => [m, planOf(m)]));

/**
 * Serialises a valid reading for the store and the live channels.
 *
 * @example
 * encodeReading({ reading: { type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: 1, temperature: 20, humidity: 40 }, metric: temperature });
 * // { buildingId: 'b', message: '{"type":"temperature","buildingId":"b","roomId":"r","timestamp":1,"temperature":20,"humidity":40}',
 * //   row: { buildingId: 'b', roomId: 'r', metric: 'temperature', ts: 1, value: 20, payload: '{"humidity":40}', fromRoomId: '' } }
 */
export function encodeReading({ reading, metric }: ValidReading): EncodedReading {
  const plan = PLANS.get(metric) ?? planOf(metric);
  let message = plan.head;
  let payload = '';
  let origin = '';
  for (const field of plan.fields) {
    const value = reading[field.name];
    if (value === undefined) continue;
    const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
    message += `,${field.key}${text}`;
    if (field.inPayload) {
      payload += payload === '' ? `{${field.key}${text}` : `,${field.key}${text}`;
      if (plan.origin && field.name === ORIGIN_FIELD && typeof value === 'string') origin = value;
    }
  }
  if (plan.general) message = JSON.stringify(declaredView(metric, reading));
  else message += '}';
  return {
    buildingId: reading.buildingId,
    message,
    row: {
      buildingId: reading.buildingId,
      roomId: reading.roomId,
      metric: metric.key,
      ts: reading.timestamp,
      value: reading[metric.value_field] as number,
      payload: payload === '' ? '{}' : `${payload}}`,
      fromRoomId: origin,
    },
  };
}
