import type { ResourceType } from './resource-types.js';

/** A resource body in the upstream's canonical shape (PascalCase property names). */
export type ResourceBody = Record<string, unknown>;

/** One state an object was in, and when it became current. */
export interface TruthState {
  /** 1, 2, 3, ... per object. */
  version: number;
  /** The body the API serves while this state is current; `null` once deleted. */
  body: ResourceBody | null;
  deleted: boolean;
  /** Simulated time the state became current (ISO 8601 UTC). */
  simulatedAt: string;
  /** Wall-clock time the state became visible through the API (ISO 8601 UTC). */
  wallAt: string;
}

/** The true history of one object, oldest state first. */
export interface TruthHistory {
  type: ResourceType;
  id: string;
  deleted: boolean;
  states: TruthState[];
}

interface Entry {
  type: ResourceType;
  id: string;
  states: TruthState[];
}

/**
 * Every object the simulator holds, with its full history. The resource API serves the latest
 * state from here, so a change is visible through the API the moment it is recorded, before any
 * event about it is dispatched (the loader fetches on receipt).
 */
export class TruthStore {
  private readonly entries = new Map<string, Entry>();
  /** Per type, ids in creation order: list endpoints page over this. */
  private readonly order = new Map<ResourceType, string[]>();

  constructor(private readonly simulatedNow: () => Date) {}

  create(type: ResourceType, id: string, body: ResourceBody): ResourceBody {
    const key = keyOf(type, id);
    if (this.entries.has(key)) throw new Error(`${type} ${id} exists already`);
    const entry: Entry = { type, id, states: [] };
    this.entries.set(key, entry);
    const ids = this.order.get(type) ?? [];
    ids.push(id);
    this.order.set(type, ids);
    this.append(entry, asJson(body), false);
    return body;
  }

  /** Applies `change` to a copy of the current body and records the result as a new state (none if nothing changed). */
  update(type: ResourceType, id: string, change: (body: ResourceBody) => void): ResourceBody {
    const entry = this.live(type, id);
    const next = structuredClone(entry.states.at(-1)?.body ?? {});
    change(next);
    const stored = asJson(next);
    if (JSON.stringify(stored) !== JSON.stringify(entry.states.at(-1)?.body)) this.append(entry, stored, false);
    return stored;
  }

  delete(type: ResourceType, id: string): void {
    this.append(this.live(type, id), null, true);
  }

  /** The current body, or undefined when unknown or deleted. A copy: callers cannot change the truth. */
  get(type: ResourceType, id: string): ResourceBody | undefined {
    const body = this.entries.get(keyOf(type, id))?.states.at(-1)?.body;
    return body ? structuredClone(body) : undefined;
  }

  /** Live objects of a type in creation order, `skip` and `take` applied. */
  list(type: ResourceType, skip: number, take: number): ResourceBody[] {
    const out: ResourceBody[] = [];
    let skipped = 0;
    for (const id of this.order.get(type) ?? []) {
      const body = this.get(type, id);
      if (!body) continue;
      if (skipped++ < skip) continue;
      out.push(body);
      if (out.length >= take) break;
    }
    return out;
  }

  history(type: ResourceType, id: string): TruthHistory | undefined {
    const entry = this.entries.get(keyOf(type, id));
    if (!entry) return undefined;
    const states = structuredClone(entry.states);
    return { type, id, deleted: states.at(-1)?.deleted ?? false, states };
  }

  /** Every object ever created, per type, in creation order (deleted ones included). */
  ids(type: ResourceType): string[] {
    return [...(this.order.get(type) ?? [])];
  }

  private live(type: ResourceType, id: string): Entry {
    const entry = this.entries.get(keyOf(type, id));
    if (!entry || entry.states.at(-1)?.deleted) throw new Error(`${type} ${id} does not exist`);
    return entry;
  }

  private append(entry: Entry, body: ResourceBody | null, deleted: boolean): void {
    entry.states.push({
      version: entry.states.length + 1,
      body,
      deleted,
      simulatedAt: this.simulatedNow().toISOString(),
      wallAt: new Date().toISOString(),
    });
  }
}

function keyOf(type: ResourceType, id: string): string {
  return `${type}:${id}`;
}

/** Stores what the API will serialise, so the truth equals what a client reads (no undefined, no -0). */
function asJson(body: ResourceBody): ResourceBody {
  return JSON.parse(JSON.stringify(body)) as ResourceBody;
}
