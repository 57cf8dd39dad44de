import { describe, expect, it } from 'vitest';
import { presentBody, UNKNOWN_FIELDS } from './body-presentation.js';
import { createRandom } from './seeded-random.js';

const body = { Id: 'a1', CustomerId: 'c1', Address: { PostalCode: '10115' }, Phases: [{ StartDate: 'x' }] };

describe('presentBody (spec 9.3, 9.4)', () => {
  it('keeps the canonical body by default', () => {
    expect(presentBody(body, { propertyCase: 'pascal', unknownFields: false }, createRandom(1))).toEqual(body);
  });

  it('recases every property name, nested ones too', () => {
    expect(presentBody(body, { propertyCase: 'camel', unknownFields: false }, createRandom(1))).toEqual({ id: 'a1', customerId: 'c1', address: { postalCode: '10115' }, phases: [{ startDate: 'x' }] });
    expect(presentBody(body, { propertyCase: 'upper', unknownFields: false }, createRandom(1))).toHaveProperty('CUSTOMERID', 'c1');
    expect(presentBody(body, { propertyCase: 'lower', unknownFields: false }, createRandom(1))).toHaveProperty('address.postalcode', '10115');
  });

  it('mixes cases per property, and the same values stay under case-insensitively equal names', () => {
    const mixed = presentBody(body, { propertyCase: 'mixed', unknownFields: false }, createRandom(3));
    const normalise = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(normalise) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toLowerCase(), normalise(x)])) : v;
    expect(normalise(mixed)).toEqual(normalise(body));
    expect(Object.keys(mixed)).not.toEqual(Object.keys(body));
  });

  it('adds the same unknown fields to every body', () => {
    const a = presentBody(body, { propertyCase: 'pascal', unknownFields: true }, createRandom(1));
    expect(a).toMatchObject(UNKNOWN_FIELDS);
    expect(a).toMatchObject(body);
  });
});
