import type pg from 'pg';
import { quoteIdent } from '../db/pool.js';
import { ANALYST_ROLE, WRITER_ROLE } from './resource-types.js';

/**
 * Which group roles a warehouse schema is granted to (DATABASE_ROLES):
 * - `shared`: `billing_loader_writer` and `billing_loader_analyst`, the same two for every schema
 *   of the cluster, so a login holding one reaches every warehouse schema of the cluster;
 * - `schema`: `<schema>_writer` and `<schema>_analyst`, granted on that schema only, so each tenant
 *   (a deployment with its own DATABASE_SCHEMA) has logins that reach its own schema and no other.
 */
export type RoleMode = 'shared' | 'schema';
export const ROLE_MODES: readonly RoleMode[] = ['shared', 'schema'];

/** The writer (the sink: reads and appends) and the analyst (reads the views) of a warehouse schema. */
export interface WarehouseRoles {
  writer: string;
  analyst: string;
}

export const SHARED_ROLES: Readonly<WarehouseRoles> = Object.freeze({ writer: WRITER_ROLE, analyst: ANALYST_ROLE });

/** The longest schema name whose roles fit PostgreSQL's 63-byte names (`_analyst` is 8 more). */
export const MAX_SCHEMA_FOR_ROLES = 63 - '_analyst'.length;

/**
 * The roles of the warehouse schema `schema` (the tenant's DATABASE_SCHEMA: `replay --rebuild`
 * migrates a fresh schema under another name and gives it the live schema's roles).
 */
export function warehouseRoles(mode: RoleMode, schema: string): WarehouseRoles {
  return mode === 'shared' ? { ...SHARED_ROLES } : { writer: `${schema}_writer`, analyst: `${schema}_analyst` };
}

export const isSharedRoles = (roles: WarehouseRoles): boolean => roles.writer === WRITER_ROLE && roles.analyst === ANALYST_ROLE;

/** Creates a NOLOGIN role unless it exists; two schemas migrated at once may race on it. */
async function ensureRole(client: pg.PoolClient, role: string): Promise<void> {
  await client.query(`DO $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('billing-loader.roles'));
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ${literal(role)}) THEN
    BEGIN
      CREATE ROLE ${quoteIdent(role)} NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
  END IF;
END
$$`);
}

const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

interface Grant {
  kind: 'SCHEMA' | 'TABLE' | 'SEQUENCE' | 'FUNCTION';
  object: string;
  privilege: string;
  grantee: string;
}

/**
 * Every privilege a role of `from` holds on the schema or an object in it (tables, views,
 * sequences, functions): the migrations and the views grant to the cluster-wide roles by name.
 */
async function grantsOn(client: pg.PoolClient, schema: string, roles: string[]): Promise<Grant[]> {
  const { rows } = await client.query<Grant>(
    `WITH s AS (SELECT oid, nspname, nspacl FROM pg_namespace WHERE nspname = $1)
     SELECT 'SCHEMA' AS kind, quote_ident(s.nspname) AS object, x.privilege_type AS privilege, r.rolname AS grantee
       FROM s CROSS JOIN LATERAL aclexplode(s.nspacl) x JOIN pg_roles r ON r.oid = x.grantee
      WHERE r.rolname = ANY($2)
     UNION ALL
     SELECT CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, quote_ident(s.nspname) || '.' || quote_ident(c.relname), x.privilege_type, r.rolname
       FROM s JOIN pg_class c ON c.relnamespace = s.oid CROSS JOIN LATERAL aclexplode(c.relacl) x JOIN pg_roles r ON r.oid = x.grantee
      WHERE r.rolname = ANY($2)
     UNION ALL
     SELECT 'FUNCTION', quote_ident(s.nspname) || '.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')', x.privilege_type, r.rolname
       FROM s JOIN pg_proc p ON p.pronamespace = s.oid CROSS JOIN LATERAL aclexplode(p.proacl) x JOIN pg_roles r ON r.oid = x.grantee
      WHERE r.rolname = ANY($2)`,
    [schema, roles],
  );
  return rows;
}

/**
 * Gives the schema's privileges to its own roles (`roles`, DATABASE_ROLES=schema) and takes them
 * from the cluster-wide ones: what `billing_loader_writer` held there, `roles.writer` holds, and
 * likewise the analyst. Run by migrate inside the transaction that granted them (each migration,
 * then the views'), so no committed moment lets another tenant's login in. Column privileges are
 * not moved: no migration grants any.
 */
export async function moveGrantsToSchemaRoles(client: pg.PoolClient, schema: string, roles: WarehouseRoles): Promise<number> {
  if (isSharedRoles(roles)) return 0;
  await ensureRole(client, roles.writer);
  await ensureRole(client, roles.analyst);
  const to: Record<string, string> = { [WRITER_ROLE]: roles.writer, [ANALYST_ROLE]: roles.analyst };
  const grants = await grantsOn(client, schema, [WRITER_ROLE, ANALYST_ROLE]);
  for (const g of grants) {
    await client.query(`GRANT ${g.privilege} ON ${g.kind} ${g.object} TO ${quoteIdent(to[g.grantee] as string)}`);
    await client.query(`REVOKE ${g.privilege} ON ${g.kind} ${g.object} FROM ${quoteIdent(g.grantee)}`);
  }
  return grants.length;
}
