import express, { type Request, type Response, type Router } from 'express';
import { presentBody, type PresentationOptions } from './body-presentation.js';
import { RESOURCE_PATHS, RESOURCE_TYPES, type ResourceType } from './resource-types.js';
import type { SeededRandom } from './seeded-random.js';
import type { TokenIssuer } from './token-issuer.js';
import type { TruthStore } from './truth-store.js';

/** Page size when `take` is absent, and the largest `take` honoured. Assumptions (spec 4.2: paging not shown). */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

/**
 * The REST API under `/api/v1/` (spec 4.2, 5): `GET /{Type}s/{id}` and the list endpoint
 * `GET /{Type}s?skip=&take=` (a JSON array in creation order; a page shorter than `take` is the
 * last). Every request carries a bearer token in the Authorization header or the
 * `access_token` query parameter (spec 5.2). Error bodies are `{"Message": "..."}`: the spec
 * shows no error format (section 7), this one is an assumption.
 */
export function resourceRouter(deps: { store: TruthStore; issuer: TokenIssuer; presentation: () => PresentationOptions; random: SeededRandom }): Router {
  const router = express.Router({ caseSensitive: false });
  router.use((req, res, next) => {
    const token = bearerToken(req);
    if (!token || !deps.issuer.isValid(token)) {
      res.set('WWW-Authenticate', `Bearer realm="billing sandbox"${token ? ', error="invalid_token"' : ''}`);
      return void res.status(401).json({ Message: 'Authorization has been denied for this request.' });
    }
    next();
  });
  for (const type of RESOURCE_TYPES) {
    const path = `/${RESOURCE_PATHS[type]}`;
    router.get(path, (req, res) => list(req, res, type, deps));
    router.get(`${path}/:id`, (req, res) => {
      const body = deps.store.get(type, req.params.id);
      if (!body) return void res.status(404).json({ Message: `${type} not found` });
      res.json(presentBody(body, deps.presentation(), deps.random));
    });
  }
  router.use((_req, res) => void res.status(404).json({ Message: 'No such endpoint' }));
  return router;
}

function list(req: Request, res: Response, type: ResourceType, deps: { store: TruthStore; presentation: () => PresentationOptions; random: SeededRandom }): void {
  const skip = intParam(req.query.skip, 0);
  const take = intParam(req.query.take, DEFAULT_PAGE_SIZE);
  // Rejecting an oversized take, rather than truncating it, keeps "a short page is the last" true.
  if (skip === undefined || take === undefined || take < 1 || take > MAX_PAGE_SIZE) {
    return void res.status(400).json({ Message: `skip must be a non-negative integer and take an integer from 1 to ${MAX_PAGE_SIZE}` });
  }
  const page = deps.store.list(type, skip, take);
  res.json(page.map((b) => presentBody(b, deps.presentation(), deps.random)));
}

function intParam(raw: unknown, fallback: number): number | undefined {
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) return undefined;
  return Number(raw);
}

function bearerToken(req: Request): string | undefined {
  const header = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  if (header?.[1]) return header[1];
  const q = req.query.access_token;
  return typeof q === 'string' && q !== '' ? q : undefined;
}
