// Drives the broker's web console (/ui/) in headless Chromium (Debian's, through
// playwright-core) for tests/integration/test_console.py. Usage:
//   node console.mjs SCENARIO JSON
// JSON: {"url": "http[s]://HOST:PORT", "user", "password" (no user: no log-in form
// expected), "client_cert", ...scenario's own fields}.
// Prints one JSON line: what the pages showed.
import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';

const require = createRequire(import.meta.url);
const [scenario, json] = process.argv.slice(2);
const args = JSON.parse(json);
const WAIT = 30000;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
// args.client_cert {cert, key} (PEM files): presented to the broker's HTTPS listener
// (mutual TLS) through playwright's client certificates.
const page = await browser.newPage({
  viewport: { width: 1280, height: 800 },
  ignoreHTTPSErrors: true,
  clientCertificates: args.client_cert ? [{ origin: args.url, certPath: args.client_cert.cert, keyPath: args.client_cert.key }] : [],
});
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));

async function open(hash) {
  await page.goto(args.url + '/ui/' + hash);
  if (args.user) {
    await page.getByTestId('login').waitFor({ timeout: WAIT });
    await page.fill('input[name=user]', args.user);
    await page.fill('input[name=password]', args.password);
    await page.click('form[data-testid=login] button');
  }
  await page.getByTestId('who').waitFor({ timeout: WAIT });
}

async function goto(hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
async function rowsOf(testid) {
  return page.$$eval(`[data-testid="${testid}"] tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
}
async function shot(name) {
  if (args.shots) await page.screenshot({ path: `${args.shots}/${name}.png`, fullPage: false });
}
async function waitText(testid, want) {
  await page.waitForFunction(([t, w]) => document.querySelector(`[data-testid="${t}"]`)?.textContent.trim() === w,
    [testid, want], { timeout: WAIT });
}

const out = { scenario };
try {
  if (scenario === 'pages') {
    // Without credentials a secured console shows only the log-in form.
    await page.goto(args.url + '/ui/');
    // (The form appears once the app has asked who is logged in: wait for it.)
    out.login_form = args.user
      ? await page.getByTestId('login').waitFor({ timeout: WAIT }).then(() => true, () => false)
      : null;
    if (args.user) await shot('login');
    await open('#/overview');
    out.who = (await texts('[data-testid=who]'))[0];
    await page.waitForFunction(() => document.querySelector('[data-testid=topic-count]')?.textContent.trim() !== '', null, { timeout: WAIT });
    out.topic_count = Number((await texts('[data-testid=topic-count]'))[0]);
    // Three polls of /metrics give two points on each chart.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=chart-throughput]')?.dataset.points) >= 3, null, { timeout: WAIT });
    out.listeners = await rowsOf('listeners');
    out.nav = await texts('nav a');
    await shot('overview');
    await goto(`#/topics/${encodeURIComponent(args.topic)}`);
    await page.locator('[data-testid=partitions] tbody tr').first().waitFor({ timeout: WAIT });
    await page.locator('[data-testid=configs] tbody tr').first().waitFor({ timeout: WAIT });
    await page.locator('[data-testid=topics] tbody tr').first().waitFor({ timeout: WAIT });
    out.topics = await rowsOf('topics');
    out.partitions = await rowsOf('partitions');
    out.configs = await rowsOf('configs');
    await shot('topics');
    await goto(`#/messages/${encodeURIComponent(args.topic)}`);
    await page.locator('form[data-testid=message-form] button').click();
    await page.locator('[data-testid=messages] tbody tr').first().waitFor({ timeout: WAIT });
    out.messages = await rowsOf('messages');
    // The records found, downloaded as JSON lines.
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: WAIT }),
      page.getByTestId('messages-download').click()]);
    out.download_name = dl.suggestedFilename();
    out.download = (await readFile(await dl.path(), 'utf8')).split('\n').filter((l) => l).map((l) => JSON.parse(l));
    await shot('messages');
    await goto(`#/groups/${encodeURIComponent(args.group)}`);
    await page.locator('[data-testid=group-offsets] tbody tr').first().waitFor({ timeout: WAIT });
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=chart-lag]')?.dataset.points) >= 2, null, { timeout: WAIT });
    await page.locator('[data-testid=groups] tbody tr').first().waitFor({ timeout: WAIT });
    out.groups = await rowsOf('groups');
    out.group_offsets = await rowsOf('group-offsets');
    await shot('groups');
    await goto('#/sql');
    await page.fill('[data-testid=sql-text]', args.sql);
    await page.click('[data-testid=sql-run]');
    await page.getByTestId('sql-grid').waitFor({ timeout: WAIT });
    await page.getByTestId('sql-chart').waitFor({ timeout: WAIT });
    out.sql_rows = await rowsOf('sql-grid');
    out.sql_status = (await texts('[data-testid=sql-status]'))[0];
    out.sql_chart_canvas = await page.locator('[data-testid=sql-chart] canvas').count();
    out.sql_chart_points = Number(await page.getByTestId('sql-chart').getAttribute('data-points'));
    // The same column as bars.
    await page.getByLabel('bars').check();
    await page.locator('[data-testid=sql-chart] canvas').waitFor({ timeout: WAIT });
    out.sql_bar_canvas = await page.locator('[data-testid=sql-chart] canvas').count();
    await shot('sql');
    await goto('#/expansions');
    await page.locator('[data-testid=expansions] tbody tr').first().waitFor({ timeout: WAIT });
    out.expansions = await rowsOf('expansions');
    await shot('expansions');
    if (out.nav.includes('Users & policies')) {
      await goto('#/security');
      await page.locator('[data-testid=users] tbody tr').first().waitFor({ timeout: WAIT });
      await page.locator('[data-testid=policies] tbody tr').first().waitFor({ timeout: WAIT });
      out.users = await rowsOf('users');
      out.policies = (await rowsOf('policies')).map((r) => r.slice(0, 2));
      await shot('security');
    }
  } else if (scenario === 'time') {
    // Records from a time: the first record at or after args.from_ms.
    await open(`#/messages/${encodeURIComponent(args.topic)}`);
    await page.selectOption('select[name=mode]', 'time');
    const local = new Date(args.from_ms - new Date(args.from_ms).getTimezoneOffset() * 60000).toISOString().slice(0, 19);
    await page.fill('input[name=time]', local);
    await page.fill('input[name=limit]', '3');
    await page.locator('form[data-testid=message-form] button').click();
    await page.locator('[data-testid=messages] tbody tr').first().waitFor({ timeout: WAIT });
    out.messages = await rowsOf('messages');
  } else if (scenario === 'lag') {
    // The group's lag as shown, then a kafkajs consumer in the group catches up and
    // commits, and the page's lag falls to 0.
    await open(`#/groups/${encodeURIComponent(args.group)}`);
    await waitText('group-lag', String(args.lag));
    out.lag_before = Number((await texts('[data-testid=group-lag]'))[0]);
    const { Kafka, logLevel } = require('kafkajs');
    const kafka = new Kafka({ clientId: 'console-test', brokers: [args.kafka], sasl: args.sasl, logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId: args.group });
    await consumer.connect();
    await consumer.subscribe({ topic: args.topic, fromBeginning: true });
    let seen = 0;
    const caught = new Promise((resolve) => {
      consumer.run({ autoCommitInterval: 100, eachMessage: async () => { if (++seen >= args.lag) resolve(); } });
    });
    await Promise.race([caught, new Promise((_, rej) => setTimeout(() => rej(new Error(`consumed ${seen} of ${args.lag}`)), WAIT))]);
    // While it is in the group, the page lists it among the members.
    await page.locator('[data-testid=group-members] tbody tr', { hasText: 'console-test' }).first().waitFor({ timeout: WAIT });
    out.members = await rowsOf('group-members');
    await consumer.commitOffsets([]).catch(() => {});
    await consumer.disconnect();
    out.consumed = seen;
    await waitText('group-lag', '0');
    out.lag_after = Number((await texts('[data-testid=group-lag]'))[0]);
    out.chart_points = Number(await page.getByTestId('chart-lag').getAttribute('data-points'));
  } else if (scenario === 'restricted') {
    // A user without rights on the cluster: no admin page, and what it may not do refused.
    await open('#/overview');
    out.nav = await texts('nav a');
    out.who = (await texts('[data-testid=who]'))[0];
    out.login_form = await page.getByTestId('login').count();
    await goto('#/security');
    await page.locator('[role=alert]').first().waitFor({ timeout: WAIT });
    out.security_error = (await texts('[role=alert]'))[0];
    await goto('#/sql');
    await page.fill('[data-testid=sql-text]', args.sql);
    await page.click('[data-testid=sql-run]');
    await page.locator('[role=alert]').first().waitFor({ timeout: WAIT });
    out.sql_error = (await texts('[role=alert]'))[0];
    await goto('#/topics');
    await page.locator('[data-testid=topics] tbody tr').first().waitFor({ timeout: WAIT });
    out.topics = (await rowsOf('topics')).map((r) => r[0]);
    await goto(`#/topics/${encodeURIComponent(args.topic)}`);
    await page.locator('[data-testid=partitions] tbody tr').first().waitFor({ timeout: WAIT });
    await page.fill('form[data-testid=config-form] input[name=name]', 'retention.ms');
    await page.fill('form[data-testid=config-form] input[name=value]', '1000');
    await page.click('form[data-testid=config-form] button');
    await page.locator('[data-testid=topic-detail] [role=alert]').first().waitFor({ timeout: WAIT });
    out.config_error = (await texts('[data-testid=topic-detail] [role=alert]'))[0];
  } else if (scenario === 'config') {
    // Sets a topic config from the Topics page, then takes it back to its default.
    await open(`#/topics/${encodeURIComponent(args.topic)}`);
    await page.locator('[data-testid=configs] tbody tr').first().waitFor({ timeout: WAIT });
    await page.fill('form[data-testid=config-form] input[name=name]', args.name);
    await page.fill('form[data-testid=config-form] input[name=value]', args.value);
    await page.click('form[data-testid=config-form] button');
    await page.getByTestId('config-done').waitFor({ timeout: WAIT });
    await page.waitForFunction(([n, v]) => [...document.querySelectorAll('[data-testid=configs] tbody tr')]
      .some((tr) => tr.children[0].textContent === n && tr.children[1].textContent === v), [args.name, args.value], { timeout: WAIT });
    out.after_set = (await rowsOf('configs')).find((r) => r[0] === args.name);
  } else if (scenario === 'reset') {
    // Resets a group's offsets to a time from the Groups page; its lag follows.
    await open(`#/groups/${encodeURIComponent(args.group)}`);
    await page.locator('[data-testid=group-offsets] tbody tr').first().waitFor({ timeout: WAIT });
    out.lag_before = Number((await texts('[data-testid=group-lag]'))[0]);
    await page.selectOption('form[data-testid=reset-form] select[name=to]', args.to);
    if (args.to === 'timestamp') {
      const local = new Date(args.from_ms - new Date(args.from_ms).getTimezoneOffset() * 60000).toISOString().slice(0, 19);
      await page.fill('form[data-testid=reset-form] input[name=time]', local);
    }
    await page.click('form[data-testid=reset-form] button');
    await page.getByTestId('reset-done').waitFor({ timeout: WAIT });
    out.done = (await texts('[data-testid=reset-done]'))[0];
    await waitText('group-lag', String(args.lag));
    out.lag_after = Number((await texts('[data-testid=group-lag]'))[0]);
    out.group_offsets = await rowsOf('group-offsets');
  } else if (scenario === 'badlogin') {
    await page.goto(args.url + '/ui/');
    await page.getByTestId('login').waitFor({ timeout: WAIT });
    await page.fill('input[name=user]', args.user);
    await page.fill('input[name=password]', args.password);
    await page.click('form[data-testid=login] button');
    await page.locator('[role=alert]').first().waitFor({ timeout: WAIT });
    out.error = (await texts('[role=alert]'))[0];
    out.logged_in = await page.getByTestId('who').count();
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  out.page_errors = consoleErrors;
} catch (e) {
  out.error_thrown = String(e.stack || e);
  out.page_errors = consoleErrors;
  if (args.shots) await page.screenshot({ path: `${args.shots}/failure-${scenario}.png` }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
