import express, { type Request, type Response, type Router } from 'express';
import { presentBody, type PresentationOptions } from './body-presentation.js';
import { RESOURCE_PATHS, RESOURCE_TYPES, type ResourceType } from './resource-types.js';
import type { SeededRandom } from './seeded-random.js';
import type { TokenIssuer } from './token-issuer.js';
import type { TruthStore } from './truth-store.js';

/** Page size when `take` is absent (an assumption: undocumented), and the largest `take` honoured (documented "500 max."). */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
/** The largest `skip` answered (documented: "skip is limited to 1000 elements"); past it: 400 (the status is assumed). */
export const MAX_SKIP = 1000;
/** Types listed with `skip`/`take` only, as the service's clients show for invoice drafts; the others also take a `from` cursor. */
const SKIP_ONLY: ReadonlySet<ResourceType> = new Set<ResourceType>(['InvoiceDraft']);

/**
 * The REST API under `/api/v1/` (spec 4.2, 5): `GET /{Type}s/{id}` and the list endpoint
 * `GET /{Type}s?from=<Id>&take=` or `?skip=&take=`, a bare JSON array ordered by Id (list()). Every request carries a bearer token in the Authorization header or the
 * `access_token` query parameter (spec 5.2). Error bodies are `{"Message": "..."}`: the spec
 * shows no error format (section 7), this one is an assumption.
 */
export function resourceRouter(deps: { store: TruthStore; issuer: TokenIssuer; presentation: () => PresentationOptions; random: SeededRandom; legalEntityId?: string }): Router {
  const router = express.Router({ caseSensitive: false });
  router.use((req, res, next) => {
    const token = bearerToken(req);
    if (!token || !deps.issuer.isValid(token)) {
      res.set('WWW-Authenticate', `Bearer realm="billing sandbox"${token ? ', error="invalid_token"' : ''}`);
      return void res.status(401).json({ Message: 'Authorization has been denied for this request.' });
    }
    // An account with an entity hierarchy needs the entity named on every request (documented:
    // "only required with Entity Hierarchy"); the status of a request without it is assumed.
    if (deps.legalEntityId !== undefined && req.get('x-selected-legal-entity-id') !== deps.legalEntityId) {
      return void res.status(403).json({ Message: 'This account has an entity hierarchy: select a legal entity with X-SELECTED-LEGAL-ENTITY-ID.' });
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

/**
 * A list page as the service documents it: ordered by Id; `from=<Id>` starts at that id
 * (inclusive, stable: objects created meanwhile do not shift it) on every type but invoice
 * drafts; `skip` past 1000 is refused with 400; `take` above 500 is cut to 500. With neither
 * `from` nor `skip` the first page.
 */
function list(req: Request, res: Response, type: ResourceType, deps: { store: TruthStore; presentation: () => PresentationOptions; random: SeededRandom }): void {
  const skip = intParam(req.query.skip, 0);
  const take = intParam(req.query.take, DEFAULT_PAGE_SIZE);
  const from = req.query.from;
  if (skip === undefined || take === undefined || take < 1) {
    return void res.status(400).json({ Message: 'skip must be a non-negative integer and take a positive one' });
  }
  if (skip > MAX_SKIP) return void res.status(400).json({ Message: `skip is limited to ${MAX_SKIP} elements; use the from cursor` });
  if (from !== undefined && (typeof from !== 'string' || SKIP_ONLY.has(type))) return void res.status(400).json({ Message: `from is not supported on ${RESOURCE_PATHS[type]}` });
  const ids = deps.store.ids(type).sort();
  let at = 0;
  if (from !== undefined) while (at < ids.length && (ids[at] as string) < from) at++;
  const page = [];
  let skipped = 0;
  for (; at < ids.length && page.length < Math.min(take, MAX_PAGE_SIZE); at++) {
    const body = deps.store.get(type, ids[at] as string);
    if (!body || skipped++ < skip) continue;
    page.push(body);
  }
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
