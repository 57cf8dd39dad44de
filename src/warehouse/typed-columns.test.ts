import { describe, expect, it } from 'vitest';
import { RESOURCE_TYPES } from '../billing-api/resource-types.js';
import { loadTypedColumns, mergeTypedColumns, parseTypedColumns } from './typed-columns.js';

describe('typed column mapping', () => {
  it('the shipped mapping is valid and gives every type columns', async () => {
    const typed = await loadTypedColumns();
    for (const type of RESOURCE_TYPES) expect(typed[type].length, type).toBeGreaterThan(0);
    expect(typed.Contract.map((c) => c.column)).toEqual(expect.arrayContaining(['status', 'plan_id', 'plan_variant_id', 'start_date', 'end_date', 'current_phase_type']));
    // The documented nested fields, by their paths.
    expect(typed.PaymentTransaction).toContainEqual({ column: 'status', key: 'Status.Status', type: 'text' });
    expect(typed.Contract).toContainEqual({ column: 'current_phase_type', key: 'CurrentPhase.Type', type: 'text' });
    // Date-only fields are dates (read as UTC dates, migration 0015).
    expect(typed.Invoice).toContainEqual({ column: 'due_date', key: 'DueDate', type: 'date' });
  });

  it('a type left out has no typed columns', () => {
    const typed = parseTypedColumns({ Contract: [{ column: 'plan_id', key: 'PlanId', type: 'text' }] });
    expect(typed.Contract).toEqual([{ column: 'plan_id', key: 'PlanId', type: 'text' }]);
    expect(typed.Customer).toEqual([]);
  });

  it.each([
    [[], /object keyed by resource type/],
    [{ Contracts: [] }, /unknown resource type "Contracts"/],
    [{ Contract: {} }, /must be a list/],
    [{ Contract: [{ column: 'PlanId', key: 'PlanId', type: 'text' }] }, /lower-case SQL name/],
    [{ Contract: [{ column: 'plan; drop', key: 'PlanId', type: 'text' }] }, /lower-case SQL name/],
    [{ Contract: [{ column: 'body', key: 'Body', type: 'text' }] }, /every view already has/],
    [{ Contract: [{ column: 'customer_id', key: 'CustomerId', type: 'text' }] }, /every view already has/],
    [{ Contract: [{ column: 'a', key: 'A', type: 'text' }, { column: 'a', key: 'B', type: 'text' }] }, /declared twice/],
    [{ Contract: [{ column: 'a', key: '', type: 'text' }] }, /key must be/],
    [{ Contract: [{ column: 'a', key: 'Status.', type: 'text' }] }, /steps through nested objects/],
    [{ Contract: [{ column: 'a', key: '.Status', type: 'text' }] }, /steps through nested objects/],
    [{ Contract: [{ column: 'a', key: 'A', type: 'varchar(3); drop' }] }, /type must be one of/],
  ])('refuses %j', (mapping, message) => {
    expect(() => parseTypedColumns(mapping)).toThrow(message);
  });

  it('a customer_id typed column is allowed where the view has none', () => {
    expect(parseTypedColumns({ Order: [{ column: 'customer_id', key: 'CustomerId', type: 'text' }] }).Order).toHaveLength(1);
  });

  it("a user's file merges over the packaged mapping: same name replaces in place, new columns follow, other types stay", () => {
    const packaged = parseTypedColumns({
      Contract: [{ column: 'status', key: 'LifecycleStatus', type: 'text' }, { column: 'plan_id', key: 'PlanId', type: 'text' }],
      Customer: [{ column: 'locale', key: 'Locale', type: 'text' }],
    });
    const user = parseTypedColumns({
      Contract: [{ column: 'reference_code_raw', key: 'ReferenceCode', type: 'jsonb' }, { column: 'status', key: 'LifecycleStatus', type: 'jsonb' }],
      Order: [{ column: 'total_net', key: 'Total', type: 'numeric' }],
    });
    const merged = mergeTypedColumns(packaged, user);
    expect(merged.Contract).toEqual([
      { column: 'status', key: 'LifecycleStatus', type: 'jsonb' },
      { column: 'plan_id', key: 'PlanId', type: 'text' },
      { column: 'reference_code_raw', key: 'ReferenceCode', type: 'jsonb' },
    ]);
    expect(merged.Customer).toEqual(packaged.Customer);
    expect(merged.Order).toEqual(user.Order);
    expect(mergeTypedColumns(packaged, parseTypedColumns({}))).toEqual(packaged);
  });
});
