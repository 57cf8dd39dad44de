import { describe, expect, it } from 'vitest';
import type { FetchRequest } from '../wire/fetch-request.js';
import { escalationProcessesOf } from './escalation-processes.js';

const req = (event: string, siblings?: string[]): FetchRequest => ({ type: 'Contract', id: 'c1', eventId: 'e', event, receivedAt: 0, source: null, ...(siblings ? { siblings } : {}) });

describe('escalationProcessesOf', () => {
  it('remembers the process PaymentEscalated names, and the one the contract body names', () => {
    expect(escalationProcessesOf([req('PaymentEscalated', ['Customer:k', 'PaymentEscalationProcess:p1'])], { Id: 'c1' })).toEqual({ remember: ['p1'], reread: [] });
    expect(escalationProcessesOf([req('ContractChanged')], { paymentEscalationProcessId: 'p2' }, ['p1'])).toEqual({ remember: ['p1', 'p2'], reread: [] });
  });

  it('on a reset, rereads every remembered process and forgets them', () => {
    const reset = req('PaymentEscalationReset', ['Customer:k']);
    expect(escalationProcessesOf([req('PaymentRegistered'), reset], { PaymentEscalationProcessId: null }, ['p1', 'p2'])).toEqual({ remember: [], reread: ['p1', 'p2'], cause: reset });
  });

  it('nothing to do without processes', () => {
    expect(escalationProcessesOf([req('PaymentEscalationReset')], {}, undefined)).toMatchObject({ remember: [], reread: [] });
  });
});
