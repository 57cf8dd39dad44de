import express, { type Router } from 'express';
import type { FaultOptions } from './faults.js';
import { isResourceType } from './resource-types.js';
import type { Simulator } from './simulator.js';

/**
 * `/_simulator/...`: the simulator's own controls for tests and demos in another process. Not
 * part of the upstream interface; unauthenticated, so bind the simulator to localhost.
 * - `GET  /_simulator/stats` counters (requests, tokens, webhooks)
 * - `GET  /_simulator/history/{Type}/{id}` true history of one object (404 if never existed)
 * - `GET  /_simulator/events` every event emitted, in order
 * - `POST /_simulator/revoke-tokens` invalidates every token issued so far
 * - `POST /_simulator/faults` JSON body: a partial FaultOptions, applied at once
 */
export function adminRouter(sim: Simulator): Router {
  const router = express.Router();
  router.get('/stats', (_req, res) => void res.json(sim.stats()));
  router.get('/events', (_req, res) => void res.json(sim.events()));
  router.get('/history/:type/:id', (req, res) => {
    const { type, id } = req.params;
    if (!isResourceType(type)) return void res.status(400).json({ Message: `unknown resource type ${type}` });
    const history = sim.history(type, id);
    if (!history) return void res.status(404).json({ Message: `${type} ${id} never existed` });
    res.json(history);
  });
  router.post('/revoke-tokens', (_req, res) => void res.json({ revoked: sim.revokeTokens() }));
  router.post('/faults', express.json(), (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const faults: Partial<FaultOptions> = {};
    for (const key of ['latencyMs', 'latencyJitterMs', 'errorRate', 'timeoutRate', 'resetRate'] as const) {
      const v = body[key];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !(v >= 0)) return void res.status(400).json({ Message: `${key} must be a non-negative number` });
      faults[key] = v;
    }
    sim.setFaults(faults);
    res.json(sim.faults());
  });
  return router;
}
