/**
 * The gateway's Prometheus metrics, and a small local HTTP listener for /metrics and /health.
 */
import { createServer, type Server } from 'node:http';
import { closeServer, listen } from '../../shared/lifecycle.js';
import { Counter, Gauge, Histogram, createRegistry, zeroLabels, type Registry } from '../../shared/prom.js';

export const AP_OUTCOMES = ['ok', 'timeout', 'unreachable', 'auth', 'bad_output', 'config', 'ap_down', 'error'] as const;
export const DELIVERIES = ['accepted', 'rejected', 'unreachable', 'kept', 'interrupted', 'not_recorded'] as const;
/** How a configuration reload ended: applied (possibly with keys left for a restart), or rejected as invalid. */
export const RELOAD_RESULTS = ['applied', 'rejected'] as const;

/** The APs (by reported name) and zones whose series a registry shows. */
export interface KnownSeries {
  aps: readonly string[];
  zones: readonly string[];
}

export interface EdgeMetrics {
  registry: Registry;
  ticks: Counter<string>;
  tickSeconds: Histogram<string>;
  tickOverruns: Counter<string>;
  apUp: Gauge<'ap'>;
  apPolls: Counter<'ap' | 'outcome'>;
  apPollSeconds: Gauge<'ap'>;
  apStations: Gauge<'ap'>;
  zoneDevices: Gauge<'zone'>;
  trackedDevices: Gauge<string>;
  frozenDevices: Gauge<string>;
  zoneMoves: Counter<string>;
  batches: Counter<'delivery'>;
  readingsRefused: Counter<string>;
  ledgerHead: Gauge<string>;
  reloads: Counter<'result'>;
}

/**
 * A registry with every edge metric, each labelled series present from the start.
 *
 * @example
 * const metrics = createEdgeMetrics({ aps: ['lobby-1'], zones: ['lobby'] });
 */
export function createEdgeMetrics(known: KnownSeries, options: { defaults?: boolean } = {}): EdgeMetrics {
  const registry = createRegistry('lintel-edge', options);
  const registers = [registry];
  const m: EdgeMetrics = {
    registry,
    ticks: new Counter({ name: 'lintel_edge_ticks_total', help: 'Poll ticks completed', registers }),
    tickSeconds: new Histogram({
      name: 'lintel_edge_tick_duration_seconds',
      help: 'Time from the start of a tick to its batch being posted or kept',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers,
    }),
    tickOverruns: new Counter({ name: 'lintel_edge_tick_overruns_total', help: 'Ticks that took longer than the poll interval', registers }),
    apUp: new Gauge({ name: 'lintel_edge_ap_up', help: '1 when the AP answered its last poll, else 0', labelNames: ['ap'], registers }),
    apPolls: new Counter({ name: 'lintel_edge_ap_polls_total', help: 'AP polls by outcome', labelNames: ['ap', 'outcome'], registers }),
    apPollSeconds: new Gauge({ name: 'lintel_edge_ap_poll_duration_seconds', help: 'Duration of the AP’s last poll', labelNames: ['ap'], registers }),
    apStations: new Gauge({ name: 'lintel_edge_ap_stations', help: 'Stations the AP listed in its last answer', labelNames: ['ap'], registers }),
    zoneDevices: new Gauge({ name: 'lintel_edge_zone_devices', help: 'Devices counted in the zone', labelNames: ['zone'], registers }),
    trackedDevices: new Gauge({ name: 'lintel_edge_tracked_devices', help: 'Devices the tracker holds', registers }),
    frozenDevices: new Gauge({ name: 'lintel_edge_frozen_devices', help: 'Devices frozen behind a silent AP', registers }),
    zoneMoves: new Counter({ name: 'lintel_edge_zone_moves_total', help: 'Devices that moved between zones', registers }),
    batches: new Counter({ name: 'lintel_edge_batches_total', help: 'Batches by delivery', labelNames: ['delivery'], registers }),
    readingsRefused: new Counter({ name: 'lintel_edge_readings_refused_total', help: 'Readings the catalog refused (not sent)', registers }),
    ledgerHead: new Gauge({ name: 'lintel_edge_ledger_head_seq', help: 'Sequence number of the newest ledger entry', registers }),
    reloads: new Counter({ name: 'lintel_edge_config_reloads_total', help: 'Configuration reloads (SIGHUP) by result', labelNames: ['result'], registers }),
  };
  for (const ap of known.aps) seedAp(m, ap);
  for (const zone of known.zones) m.zoneDevices.set({ zone }, 0);
  zeroLabels(m.batches, 'delivery', DELIVERIES);
  zeroLabels(m.reloads, 'result', RELOAD_RESULTS);
  return m;
}

function seedAp(m: EdgeMetrics, ap: string): void {
  m.apUp.set({ ap }, 0);
  for (const outcome of AP_OUTCOMES) m.apPolls.inc({ ap, outcome }, 0);
}

/**
 * After a reload: the series of APs and zones no longer configured are removed (a removed AP is not
 * "down"), and those of new ones start at 0, as at start.
 *
 * @example
 * retargetSeries(metrics, { aps: ['ap-1'], zones: ['lobby'] }, { aps: ['ap-2'], zones: ['lobby'] });
 */
export function retargetSeries(m: EdgeMetrics, before: KnownSeries, after: KnownSeries): void {
  const apsAfter = new Set(after.aps);
  const apsBefore = new Set(before.aps);
  for (const ap of before.aps) {
    if (apsAfter.has(ap)) continue;
    m.apUp.remove({ ap });
    m.apPollSeconds.remove({ ap });
    m.apStations.remove({ ap });
    for (const outcome of AP_OUTCOMES) m.apPolls.remove({ ap, outcome });
  }
  for (const ap of after.aps) if (!apsBefore.has(ap)) seedAp(m, ap);
  const zonesAfter = new Set(after.zones);
  const zonesBefore = new Set(before.zones);
  for (const zone of before.zones) if (!zonesAfter.has(zone)) m.zoneDevices.remove({ zone });
  for (const zone of after.zones) if (!zonesBefore.has(zone)) m.zoneDevices.set({ zone }, 0);
}

/** Serves GET /metrics and GET /health on a local address; `close()` stops it. */
export async function serveMetrics(registry: Registry, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable'),
      );
      return;
    }
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"Not Found","message":"no such route"}');
  });
  const bound = await listen(server, port, host);
  return { port: bound, close: () => closeServer(server) };
}
