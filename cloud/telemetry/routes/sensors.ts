/**
 * GET /sensors/buildings/{buildingId}/rooms/{roomId}: the room's sensors, each with its capability
 * (the metric's actions that the sensor's driver binds). Endpoints are never listed.
 */
import { Router } from 'express';
import type { BuildingDirectory } from '../../../shared/directory.js';
import { requireClaims } from '../../../shared/http.js';
import { metricOf } from '../../../shared/catalog/metrics.js';
import { capabilitiesOf, type BindingCatalog } from '../../../shared/devices/bindings.js';
import type { BuildingStore } from '../store/buildings.js';
import { pathId, requireRead } from './access.js';

export function sensorsRouter(deps: { directory: BuildingDirectory; store: Pick<BuildingStore, 'sensorsIn'>; catalog: BindingCatalog }): Router {
  const router = Router();
  router.get('/sensors/buildings/:buildingId/rooms/:roomId', requireClaims(), async (req, res) => {
    const buildingId = pathId(req, 'buildingId');
    const roomId = pathId(req, 'roomId');
    await requireRead(deps.directory, buildingId, req, res);
    const sensors = (await deps.store.sensorsIn(buildingId, roomId)).map((sensor) => {
      const metric = metricOf(sensor.metric);
      const actions = metric ? capabilitiesOf(metric, deps.catalog.driver(sensor.driver)) : [];
      return { sensorId: sensor.sensorId, metric: sensor.metric, driver: sensor.driver, capability: actions.map((a) => a.name), actions };
    });
    res.json({ buildingId, roomId, sensors });
  });
  return router;
}
