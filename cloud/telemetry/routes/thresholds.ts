/**
 * PATCH /thresholds/{sensorType}/buildings/{id}/rooms and PUT /thresholds/buildings/{id}. Both are
 * edits: the caller must pass CanEditDomains over the building's domains. The whole body is checked
 * before anything is written; then one upsert per room (or per metric) in one transaction.
 */
import { Router } from 'express';
import type { BuildingDirectory } from '../../../shared/directory.js';
import { HttpError, jsonBody } from '../../../shared/errors.js';
import { requireClaims } from '../../../shared/http.js';
import { metricOf, METRICS } from '../../../shared/catalog/metrics.js';
import { parseBuildingPut, parseRoomsPatch } from '../domain/thresholds.js';
import type { ThresholdStore } from '../store/thresholds.js';
import { pathId, requireEdit } from './access.js';

export function thresholdsRouter(deps: { directory: BuildingDirectory; store: ThresholdStore }): Router {
  const router = Router();

  router.patch('/thresholds/:sensorType/buildings/:id/rooms', requireClaims(), jsonBody(), async (req, res) => {
    const buildingId = pathId(req, 'id');
    await requireEdit(deps.directory, buildingId, req, res);
    const metric = metricOf(req.params.sensorType as string);
    if (!metric) throw new HttpError(404, `unknown metric ${JSON.stringify(req.params.sensorType)}; known: ${Object.keys(METRICS).join(', ')}`);
    const parsed = parseRoomsPatch(metric, req.body);
    if (!parsed.ok) throw new HttpError(400, parsed.message, { errors: parsed.errors.map((e) => ({ room: e.scope, field: e.field, message: e.message })) });
    const rooms = await deps.store.patchRooms(buildingId, metric.key, parsed.value);
    res.json({ buildingId, metric: metric.key, rooms });
  });

  router.put('/thresholds/buildings/:id', requireClaims(), jsonBody(), async (req, res) => {
    const buildingId = pathId(req, 'id');
    await requireEdit(deps.directory, buildingId, req, res);
    const parsed = parseBuildingPut(req.body);
    if (!parsed.ok) throw new HttpError(400, parsed.message, { errors: parsed.errors.map((e) => ({ metric: e.scope, field: e.field, message: e.message })) });
    const thresholds = await deps.store.patchBuilding(buildingId, parsed.value);
    res.json({ buildingId, thresholds });
  });

  return router;
}
