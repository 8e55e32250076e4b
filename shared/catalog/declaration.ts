/**
 * The shape of a metric declaration. A metric is declared once; ingest validation, the /contracts
 * catalog, threshold checks, action validation and the edge's reading builder all read it.
 */
import type { KindName } from '../kinds.js';

/** One field of a reading, or one parameter of an action. */
export interface FieldSpec {
  name: string;
  kind: KindName;
  required: boolean;
}

/** A threshold a building may set on one field. Only `Above` is used: a value over the bound breaches. */
export interface BoundSpec {
  key: string;
  field: string;
  label: string;
  unit?: string;
  direction: 'Above';
}

/** A command a device of this metric may accept. */
export interface ActionSpec {
  name: string;
  label: string;
  parameters: FieldSpec[];
}

export interface MetricDeclaration {
  /** The field stored as the reading's value column. */
  value_field: string;
  key: string;
  label: string;
  /** The name of the client-side type. */
  interface_name: string;
  unit?: string;
  fields: FieldSpec[];
  bounds: BoundSpec[];
  actions: ActionSpec[];
  /** A count metric: its retained hourly buckets obey the privacy floor. */
  count: boolean;
  /** Breaches of this metric can notify people (notification's alertable set). */
  alertable: boolean;
}

/** The fields every reading carries: where and when. */
export const PLACE_AND_TIME: FieldSpec[] = [
  { name: 'buildingId', kind: 'NonEmptyString', required: true },
  { name: 'roomId', kind: 'NonEmptyString', required: true },
  { name: 'timestamp', kind: 'Finite', required: true },
];
