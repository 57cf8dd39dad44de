import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RESOURCE_TYPES, isResourceType, type ResourceType } from '../billing-api/resource-types.js';
import { UserError } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** The shipped mapping; `migrate` reads it each run, so editing it and migrating again applies it. */
export const typedColumnsFile = join(packageRoot, 'warehouse', 'typed-columns.json');

/** SQL types a typed column may declare: each has a safe cast `wh_as_<type>` (migration 0004). */
export const TYPED_COLUMN_SQL_TYPES = ['text', 'numeric', 'integer', 'bigint', 'boolean', 'date', 'timestamptz', 'jsonb'] as const;
export type TypedColumnSqlType = (typeof TYPED_COLUMN_SQL_TYPES)[number];

export interface TypedColumn {
  /** Column name in the views (snake_case). */
  column: string;
  /**
   * The body's key, matched in any letter case; a path through nested objects is written with
   * dots (`Status.Status`, `CurrentPhase.Type`, `Name._c`), each step matched in any letter case.
   */
  key: string;
  type: TypedColumnSqlType;
}

/** The steps of a key: the top-level key first, then one per nested object (`Status.Status`). */
export function keyPath(key: string): string[] {
  return key.split('.');
}

export type TypedColumns = Readonly<Record<ResourceType, readonly TypedColumn[]>>;

/** Columns every history/current view has before the typed ones: a typed column may not reuse them. */
export function baseColumns(type: ResourceType): string[] {
  return [
    'resource_id',
    'version',
    'valid_from',
    'valid_to',
    'is_current',
    'deleted',
    'body',
    'content_hash',
    'source_event_id',
    'source_event',
    ...(type === 'Contract' ? ['customer_id'] : []),
    'notified_at',
    'loaded_at',
  ];
}

export async function loadTypedColumns(file = typedColumnsFile): Promise<TypedColumns> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UserError(`cannot read the typed column mapping ${file}: ${(err as Error).message}`);
  }
  return parseTypedColumns(parsed, file);
}

/** Checks the mapping and returns it with every type present (an absent type has no typed columns). */
export function parseTypedColumns(value: unknown, source = 'typed column mapping'): TypedColumns {
  const fail = (why: string): never => {
    throw new UserError(`${source}: ${why}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('must be an object keyed by resource type');
  const out = Object.fromEntries(RESOURCE_TYPES.map((t) => [t, [] as TypedColumn[]])) as Record<ResourceType, TypedColumn[]>;
  for (const [type, columns] of Object.entries(value as Record<string, unknown>)) {
    if (!isResourceType(type)) fail(`unknown resource type ${JSON.stringify(type)} (one of ${RESOURCE_TYPES.join(', ')})`);
    const t = type as ResourceType;
    if (!Array.isArray(columns)) fail(`${type} must be a list of {column, key, type}`);
    const seen = new Set(baseColumns(t));
    for (const c of columns as unknown[]) {
      const { column, key, type: sqlType } = (c ?? {}) as Record<string, unknown>;
      if (typeof column !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(column)) fail(`${type}: column ${JSON.stringify(column)} must be a lower-case SQL name`);
      if (seen.has(column as string)) fail(`${type}: column ${column as string} is declared twice or is a column every view already has`);
      if (typeof key !== 'string' || key === '' || key.split('.').some((step) => step === '')) {
        fail(`${type}.${column as string}: key must be a non-empty string, its steps through nested objects joined by single dots`);
      }
      if (!(TYPED_COLUMN_SQL_TYPES as readonly unknown[]).includes(sqlType)) fail(`${type}.${column as string}: type must be one of ${TYPED_COLUMN_SQL_TYPES.join(', ')}`);
      seen.add(column as string);
      out[t].push({ column: column as string, key: key as string, type: sqlType as TypedColumnSqlType });
    }
  }
  return out;
}

/**
 * The packaged mapping with a user's own (TYPED_COLUMNS_FILE) merged over it, per type: a user's
 * column of the same name replaces the packaged one in its place; the user's other columns
 * follow the packaged ones, in the file's order. The user's file lives outside the package, so
 * an upgrade brings the new packaged columns and keeps the user's.
 */
export function mergeTypedColumns(packaged: TypedColumns, user: TypedColumns): TypedColumns {
  return Object.fromEntries(
    RESOURCE_TYPES.map((type) => {
      const mine = new Map(user[type].map((c) => [c.column, c]));
      const merged = packaged[type].map((c) => mine.get(c.column) ?? c);
      const packagedNames = new Set(packaged[type].map((c) => c.column));
      return [type, [...merged, ...user[type].filter((c) => !packagedNames.has(c.column))]];
    }),
  ) as unknown as TypedColumns;
}
