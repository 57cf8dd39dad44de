import { describe, expect, it } from 'vitest';
import { sendOffsets } from './send-offsets.js';

const offsets = { consumerGroupId: 'g', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '1' }] }] };
const concurrent = Object.assign(new Error('The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing'), { type: 'CONCURRENT_TRANSACTIONS' });

describe('sendOffsets', () => {
  it('tries again while the coordinator is still completing the previous transaction', async () => {
    let calls = 0;
    await sendOffsets(
      {
        sendOffsets: async () => {
          if (++calls < 3) throw concurrent;
        },
      },
      offsets,
    );
    expect(calls).toBe(3);
  });

  it('gives any other error back at once', async () => {
    let calls = 0;
    const fenced = Object.assign(new Error('fenced'), { type: 'INVALID_PRODUCER_EPOCH' });
    const failing = async () => {
      calls++;
      throw fenced;
    };
    await expect(sendOffsets({ sendOffsets: failing }, offsets)).rejects.toBe(fenced);
    expect(calls).toBe(1);
  });

  it('gives up after its attempts', async () => {
    await expect(sendOffsets({ sendOffsets: () => Promise.reject(concurrent) }, offsets, 3)).rejects.toThrow(/3 attempts|attempts/);
  });

  // After a broker restart AddOffsetsToTxn and TxnOffsetCommit meet a coordinator that is loading
  // or has moved; each failure aborted the part and reset the partition's owner (new producers,
  // a fence, a heads restore), so every part after a restart started over.
  it.each(['GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'REQUEST_TIMED_OUT'])('tries again while the coordinator answers %s', async (type) => {
    let calls = 0;
    const coordinator = Object.assign(new Error('coordinator not ready'), { type });
    await sendOffsets(
      {
        sendOffsets: async () => {
          if (++calls < 3) throw coordinator;
        },
      },
      offsets,
    );
    expect(calls).toBe(3);
  });
});
