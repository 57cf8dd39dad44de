import type { SeededRandom } from './seeded-random.js';

/**
 * How property names are spelled in what the simulator sends. The upstream may change the
 * letter case of property names without notice (spec 9.3), so a client must not depend on it.
 * - `pascal`: the upstream's usual style (`CustomerId`), the default;
 * - `camel` (`customerId`), `lower` (`customerid`), `upper` (`CUSTOMERID`);
 * - `mixed`: each property of each response picks one of the four at random (seeded).
 */
export type PropertyCase = 'pascal' | 'camel' | 'lower' | 'upper' | 'mixed';

export const PROPERTY_CASES: readonly PropertyCase[] = ['pascal', 'camel', 'lower', 'upper', 'mixed'];

/**
 * Fields no client knows, added to resource bodies when `unknownFields` is on (spec 9.4:
 * the upstream adds properties without notice). Constant, so that they never make two fetches
 * of one unchanged state differ.
 */
export const UNKNOWN_FIELDS: Readonly<Record<string, unknown>> = {
  SimulatorFutureField: 'ignore me',
  ExtendedAttributes: { Region: 'eu-central', Tier: 2, Flags: ['beta'] },
};

export interface PresentationOptions {
  propertyCase: PropertyCase;
  unknownFields: boolean;
}

/** The body as sent: unknown fields added (top level), then every property name (nested too) recased. */
export function presentBody(body: Record<string, unknown>, options: PresentationOptions, random: SeededRandom): Record<string, unknown> {
  const withExtras = options.unknownFields ? { ...body, ...UNKNOWN_FIELDS } : body;
  if (options.propertyCase === 'pascal') return withExtras;
  return recase(withExtras, options.propertyCase, random) as Record<string, unknown>;
}

function recase(value: unknown, mode: PropertyCase, random: SeededRandom): unknown {
  if (Array.isArray(value)) return value.map((v) => recase(v, mode, random));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[recaseName(key, mode, random)] = recase(v, mode, random);
  return out;
}

export function recaseName(name: string, mode: PropertyCase, random: SeededRandom): string {
  const effective = mode === 'mixed' ? random.pick(['pascal', 'camel', 'lower', 'upper'] as const) : mode;
  switch (effective) {
    case 'pascal':
      return name;
    case 'camel':
      return name.charAt(0).toLowerCase() + name.slice(1);
    case 'lower':
      return name.toLowerCase();
    case 'upper':
      return name.toUpperCase();
  }
}
