import type pg from 'pg';
import { quoteIdent } from '../db/pool.js';

/**
 * The dashboard's customer search: customers whose company name, customer name, person name, e-mail address
 * (`EmailAddress`), external id (`ExternalCustomerId`) or id contains the text, case-insensitive,
 * from customer_current's typed columns (documented fields, docs/SIMULATOR.md). One
 * statement, at most SEARCH_LIMIT rows: the page shows a short list to pick a timeline from.
 */

/** Most customers a search answers; a longer list asks for a more precise text. */
export const SEARCH_LIMIT = 20;

export interface CustomerMatch {
  id: string;
  companyName: string | null;
  name: string | null;
  email: string | null;
  externalId: string | null;
}

/** `text` as a LIKE pattern that matches it anywhere, its own % _ and \ taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export async function searchCustomers(pool: pg.Pool, schema: string, text: string): Promise<{ customers: CustomerMatch[]; more: boolean }> {
  const { rows } = await pool.query<{ id: string; company_name: string | null; name: string | null; email: string | null; external_id: string | null }>(
    `SELECT resource_id AS id, company_name, coalesce(customer_name, nullif(concat_ws(' ', first_name, last_name), '')) AS name, email_address AS email, external_customer_id AS external_id
       FROM ${quoteIdent(schema)}.customer_current
      WHERE company_name ILIKE $1 OR customer_name ILIKE $1 OR concat_ws(' ', first_name, last_name) ILIKE $1 OR email_address ILIKE $1 OR external_customer_id ILIKE $1 OR resource_id ILIKE $1
      ORDER BY lower(coalesce(company_name, customer_name, concat_ws(' ', first_name, last_name))), resource_id
      LIMIT $2`,
    [containsPattern(text), SEARCH_LIMIT + 1],
  );
  return {
    customers: rows.slice(0, SEARCH_LIMIT).map((r) => ({ id: r.id, companyName: r.company_name, name: r.name, email: r.email, externalId: r.external_id })),
    more: rows.length > SEARCH_LIMIT,
  };
}
