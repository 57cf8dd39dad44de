import { describe, expect, it } from 'vitest';
import { arrayLiteral, copyText } from './copy-from.js';

describe('COPY text encoding', () => {
  it('escapes exactly the characters COPY gives a meaning to, and writes null as \\N', () => {
    expect(copyText(null)).toBe('\\N');
    expect(copyText('plain {"a":1}')).toBe('plain {"a":1}');
    expect(copyText('a\\b\tc\nd\re')).toBe('a\\\\b\\tc\\nd\\re');
    expect(copyText('\\N')).toBe('\\\\N');
  });

  it('quotes every array element, escaping quotes and backslashes', () => {
    expect(arrayLiteral([])).toBe('{}');
    expect(arrayLiteral(['a', 'NULL', 'x,y', 'q"b\\'])).toBe('{"a","NULL","x,y","q\\"b\\\\"}');
  });
});
