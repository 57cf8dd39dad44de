// `npm run docs:screenshot`: docs/dashboard.png, the dashboard over the warehouse the environment
// names (DATABASE_URL, DATABASE_SCHEMA; e.g. the one `npm start` filled), in Debian's chromium.
// Usage: npm run docs:screenshot [-- --out <file.png>] [-- --id <contract id whose timeline to open>]
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { cliConfig } from '../dist/cli/cli-config.js';
import { startDashboard } from '../dist/dashboard/dashboard-server.js';
import { createHealth } from '../dist/health.js';
import { createLogger } from '../dist/log.js';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/dashboard.png' }, id: { type: 'string' }, chromium: { type: 'string', default: '/usr/bin/chromium' } } });
// As the demo's: the local stack's services unless the environment names others.
const config = await cliConfig('demo');
const dashboard = await startDashboard({ log: createLogger('warn'), health: createHealth() }, config, { host: '127.0.0.1', port: 0 });
const browser = await chromium.launch({ executablePath: values.chromium, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(`${dashboard.url}/`);
  await page.waitForFunction(() => globalThis.document.body.dataset.loaded, undefined, { timeout: 30_000 });
  // The contract with the most versions, unless one is named: its timeline shows what the search does.
  const id = values.id ?? (await dashboard.pool.query(`SELECT resource_id FROM "${config.databaseSchema}".contract_history GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)).rows[0]?.resource_id;
  if (id) {
    await page.fill('#resource-id', id);
    await page.click('#search button[type=submit]');
    await page.waitForSelector('#timeline-table');
  }
  await page.screenshot({ path: values.out, fullPage: true });
  console.log(`wrote ${values.out} (schema ${config.databaseSchema}${id ? `, timeline of contract ${id}` : ''})`);
} finally {
  await browser.close();
  await dashboard.stop();
}
