import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.js';
import { parsePartitionOffsets } from './group-reset.js';

describe('parsePartitionOffsets', () => {
  it('reads partition:offset pairs', () => {
    expect(parsePartitionOffsets('0:120, 3:7')).toEqual(new Map([[0, '120'], [3, '7']]));
  });
  it.each(['', '0', '0:-1', 'a:1', '0:1,x'])('refuses %j with a user error', (text) => {
    expect(() => parsePartitionOffsets(text)).toThrow(UserError);
  });
});
