import { describe, expect, it } from 'vitest';
import { splitJsonArray } from './json-array.js';

describe('splitJsonArray', () => {
  it('returns each element as written', () => {
    const text = ' [ {"Id":"a","Amount":1.50,"Big":12345678901234567890} ,\n{"Id":"b,]\\"[","Tags":["x",{"y":[]}]}, 3, "s", null ] ';
    expect(splitJsonArray(text)).toEqual(['{"Id":"a","Amount":1.50,"Big":12345678901234567890}', '{"Id":"b,]\\"[","Tags":["x",{"y":[]}]}', '3', '"s"', 'null']);
  });

  it('gives nothing for an empty array', () => {
    expect(splitJsonArray('[]')).toEqual([]);
    expect(splitJsonArray(' [ \n ] ')).toEqual([]);
  });

  it('agrees with JSON.parse on every element', () => {
    const values = [{ a: 'x\\"y' }, [1, [2, [3]]], 'with \\ backslash', { nested: { deep: [{}, []] } }, -0.5e3, true];
    const items = splitJsonArray(JSON.stringify(values, null, 2));
    expect(items.map((i) => JSON.parse(i) as unknown)).toEqual(values);
  });

  it.each(['{"a":1}', '"[1,2]"', '[1,', 'not json'])('refuses %j', (text) => {
    expect(() => splitJsonArray(text)).toThrow(SyntaxError);
  });
});
