import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { startPrivatePostgres, type PrivateService } from '../faults/private-services.js';
import { runCli } from '../helpers/cli.js';

/**
 * docker-compose.yml's PostgreSQL logins: deploy/compose/postgres-logins.sh, run as the postgres
 * image runs it on its first start (psql as the superuser, the passwords from the environment),
 * on a private server (it creates cluster-wide roles). Then `migrate` works as the owner it made,
 * and the sink's and the dashboard's logins hold only the writer's and the analyst's rights.
 */
const run = promisify(execFile);
let server: PrivateService;
let admin: pg.Client;
let port: string;

const urlAs = (login: string) => `postgres://${login}:secret@127.0.0.1:${port}/warehouse`;

beforeAll(async () => {
  server = await startPrivatePostgres();
  port = new URL(server.address).port;
  admin = new pg.Client({ connectionString: server.address });
  await admin.connect();
  // The postgres image creates POSTGRES_DB before it runs the init scripts.
  await admin.query('CREATE DATABASE warehouse');
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await server?.dispose();
});

async function rights(login: string): Promise<Record<string, boolean>> {
  const client = new pg.Client({ connectionString: urlAs(login) });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, boolean>>(`
      SELECT r.rolsuper AS super, r.rolcreaterole AS createrole,
             has_table_privilege('billing.resource_versions', 'INSERT') AS insert_versions,
             has_table_privilege('billing.resource_versions', 'UPDATE') AS update_versions,
             has_table_privilege('billing.resource_versions', 'DELETE') AS delete_versions,
             has_table_privilege('billing.webhook_events', 'SELECT') AS read_webhooks,
             pg_has_role('billing_loader_writer', 'MEMBER') AS writer,
             pg_has_role('billing_loader_analyst', 'MEMBER') AS analyst
        FROM pg_roles r WHERE r.rolname = current_user`);
    return rows[0] as Record<string, boolean>;
  } finally {
    await client.end();
  }
}

describe('deploy/compose/postgres-logins.sh', () => {
  it('makes an owner that migrates, a sink login that only appends, a dashboard login that only reads', async () => {
    await run('sh', [join(packageRoot, 'deploy', 'compose', 'postgres-logins.sh')], {
      env: {
        ...process.env,
        PGHOST: '127.0.0.1',
        PGPORT: port,
        POSTGRES_USER: 'postgres',
        POSTGRES_DB: 'warehouse',
        BILLING_OWNER_PASSWORD: 'secret',
        BILLING_SINK_PASSWORD: 'secret',
        BILLING_DASHBOARD_PASSWORD: "it's secret",
      },
    });

    const migrate = await runCli(['migrate'], { DATABASE_URL: urlAs('billing_owner'), DATABASE_SCHEMA: 'billing', LOG_LEVEL: 'warn' });
    expect(migrate.code, migrate.stderr).toBe(0);
    const warehouse = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/warehouse` });
    await warehouse.connect();
    const { rows: owner } = await warehouse.query<{ owner: string }>("SELECT tableowner AS owner FROM pg_tables WHERE schemaname = 'billing' AND tablename = 'resource_versions'");
    await warehouse.end();
    expect(owner).toEqual([{ owner: 'billing_owner' }]);

    expect(await rights('billing_owner')).toMatchObject({ super: false, createrole: false, writer: false, analyst: false });
    expect(await rights('billing_sink')).toEqual({
      super: false, createrole: false, insert_versions: true, update_versions: false, delete_versions: false, read_webhooks: true, writer: true, analyst: false,
    });
    expect(await rights('billing_dashboard')).toEqual({
      super: false, createrole: false, insert_versions: false, update_versions: false, delete_versions: false, read_webhooks: true, writer: false, analyst: true,
    });
  }, 120_000);
});
