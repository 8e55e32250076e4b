/**
 * The breach event on the Kafka `alerts` topic (CONTRACTS.md), keyed `{buildingId}:{roomId}`:
 * telemetry writes it (through its outbox), notification reads it.
 */

/** An alert as telemetry writes it: every field present. */
export interface AlertEvent {
  /** Stable across the outbox relay's resends and Kafka redeliveries: consumers de-duplicate on it. */
  alertId: string;
  /** the metric key */
  type: string;
  field: string;
  buildingId: string;
  roomId: string;
  value: number;
  /** the bound key, e.g. maxTemperature */
  bound: string;
  threshold: number;
  /** the reading's timestamp, epoch ms */
  timestamp: number;
}

/**
 * An alert as a consumer takes it: the five names are required; the reading, the bound and the
 * threshold are optional (null or absent), so an alert from another producer is still delivered.
 */
export type ReceivedAlert = Pick<AlertEvent, 'alertId' | 'type' | 'field' | 'buildingId' | 'roomId'> & {
  value?: number | null;
  bound?: string | null;
  threshold?: number | null;
};
