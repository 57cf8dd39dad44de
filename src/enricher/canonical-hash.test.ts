import { describe, expect, it } from 'vitest';
import { canonicalJson, contentHash } from './canonical-hash.js';

describe('contentHash', () => {
  it('ignores key order and whitespace', () => {
    expect(contentHash('{"A":1,"B":{"x":[1,2],"y":null}}')).toBe(contentHash('{ "B": {"y": null, "x": [1, 2]}, "A": 1 }'));
  });
  it('ignores the letter case of property names (spec 9.3), not of values', () => {
    expect(contentHash('{"ContractId":"Ab","PlanId":"p"}')).toBe(contentHash('{"contractid":"Ab","PLANID":"p"}'));
    expect(contentHash('{"ContractId":"Ab"}')).not.toBe(contentHash('{"ContractId":"ab"}'));
  });
  it('keeps array order and distinguishes types', () => {
    expect(contentHash('[1,2]')).not.toBe(contentHash('[2,1]'));
    expect(contentHash('{"a":1}')).not.toBe(contentHash('{"a":"1"}'));
  });
  it('sees an added unknown field as a change', () => {
    expect(contentHash('{"a":1}')).not.toBe(contentHash('{"a":1,"NewField":true}'));
  });
  it('writes nested canonical JSON', () => {
    expect(canonicalJson({ b: [{ D: 1, c: 2 }], A: 'x' })).toBe('{"a":"x","b":[{"c":2,"d":1}]}');
  });
});
