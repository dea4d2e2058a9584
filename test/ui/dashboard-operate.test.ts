import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/jobs/worker.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { driveRuns, emailTarget, importFirstBreaches, importMoreBreaches } from '../monitors/run-fixtures.js';
import { bearer, closeHarnesses, listen, newAccount, openApiHarness, type ApiHarness, type TestAccount } from '../support/api-harness.js';
import { launchChromium } from '../support/chromium.js';

/**
 * Issue 33, item 2, in a real headless Chromium against a real server on loopback: the sign-in page
 * in a main landmark, a favicon, axe-core with 0 violations signed out and in, every job row reached
 * and opened from the keyboard (and keeping focus through the page's polls), a deleted job marked,
 * a running job's partial download, and a job paused for credits explained in words with resume
 * withheld. Screenshots go to the folder the test prints.
 */

const SKIP = process.env.SLUICE_UI_TESTS === 'off';
const BATCH_PAUSE_MS = 200;
const WAIT_MS = 30_000;
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let h: ApiHarness;
let baseUrl: string;
let browser: Browser | undefined;
let stopWorker = false;
let worker: Promise<void> | undefined;
const shots = path.resolve('test-results', `dashboard-operate-${new Date().toISOString().replace(/[:.]/g, '-')}`);

async function upload(account: TestAccount, name: string, csv: string): Promise<string> {
  const form = new FormData();
  form.append('type', 'gender');
  form.append('file', new Blob([csv], { type: 'text/csv' }), name);
  const response = await fetch(`${baseUrl}/api/jobs/bulk`, { method: 'POST', headers: bearer(account.key), body: form });
  expect(response.status).toBe(202);
  return ((await response.json()) as { id: string }).id;
}

async function apiJob(account: TestAccount, id: string): Promise<{ status: string; reason: string | null }> {
  return (await (await fetch(`${baseUrl}/api/jobs/${id}`, { headers: bearer(account.key) })).json()) as { status: string; reason: string | null };
}

const emails = (n: number, prefix: string) => `email\n${Array.from({ length: n }, (_, i) => `${prefix}${i}@example.com`).join('\n')}\n`;
const jobRow = (page: Page, id: string) => page.locator(`#job-rows tr[data-id="${id}"]`);

/** axe-core's violations on the page as it is now: rule id and the elements it flags. */
async function violations(page: Page): Promise<{ id: string; nodes: string[] }[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run(document)')) as { violations: { id: string; nodes: { target: string[] }[] }[] };
  return result.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) }));
}

async function signIn(page: Page, account: TestAccount): Promise<void> {
  await page.goto(baseUrl);
  await page.fill('#api-key', account.key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#signed-in', { state: 'visible' });
}

describe.skipIf(SKIP)('operating the dashboard from the keyboard, accessibly, in a real browser', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    h = await openApiHarness({ SLUICE_CHUNK_ROWS: '100', SLUICE_BATCH_ROWS: '10', SLUICE_POLL_MS: '20' });
    baseUrl = await listen(h);
    const real = h.engine.deps.providers.get('gender')!;
    const paced: LookupProvider = {
      kind: real.kind,
      name: 'paced-gender',
      maxBatch: real.maxBatch,
      answersLocally: real.answersLocally,
      async lookup(keys, signal) {
        await sleep(BATCH_PAUSE_MS);
        return real.lookup(keys, signal);
      },
    };
    (h.engine.deps.providers as Map<string, LookupProvider>).set('gender', paced);
    worker = new Worker(h.engine.deps).run({ concurrency: 1, until: () => stopWorker });
    fs.mkdirSync(shots, { recursive: true });
    console.log(`dashboard screenshots: ${shots}`);
  }, 60_000);

  afterAll(async () => {
    stopWorker = true;
    await worker;
    await browser?.close();
    await closeHarnesses();
  });

  it('signed out and in: a main landmark, a favicon, 0 axe violations, rows by keyboard, a deleted job marked, a partial download', async () => {
    const account = await newAccount(h, { credits: 10_000 });
    // bypassCSP only so that the test can inject axe-core; the page's own CSP is checked in dashboard.test.ts.
    const context = await browser!.newContext({ acceptDownloads: true, bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();

    const done = await upload(account, 'small.csv', emails(5, 'done'));
    await expect.poll(async () => (await apiJob(account, done)).status, { timeout: WAIT_MS }).toBe('completed');
    const gone = await upload(account, 'gone.csv', emails(3, 'gone'));
    await expect.poll(async () => (await apiJob(account, gone)).status, { timeout: WAIT_MS }).toBe('completed');
    expect((await fetch(`${baseUrl}/api/jobs/${gone}`, { method: 'DELETE', headers: bearer(account.key) })).status).toBe(200);
    const big = await upload(account, 'big.csv', emails(1_000, 'big'));

    // Signed out: the form sits in a main landmark, the favicon is linked and served, axe finds nothing.
    await page.goto(baseUrl);
    expect(await page.locator('main #sign-in').count()).toBe(1);
    expect(await page.getAttribute('link[rel="icon"]', 'href')).toBe('/favicon.svg');
    const icon = await fetch(`${baseUrl}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect((await icon.text()).startsWith('<svg')).toBe(true);
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, '1-sign-in.png'), fullPage: true });

    await signIn(page, account);
    await jobRow(page, big).waitFor({ timeout: WAIT_MS });

    // The deleted job is marked, its downloads and resume withheld.
    await expect.poll(() => jobRow(page, gone).getAttribute('data-deleted'), { timeout: WAIT_MS }).toBe('true');
    expect(await jobRow(page, gone).locator('.deleted').textContent()).toBe('deleted');

    // Every job row is reached with Tab (no row took focus in 40 presses before) and opens with Enter.
    const reached = new Set<string>();
    for (let i = 0; i < 40 && reached.size < 3; i++) {
      await page.keyboard.press('Tab');
      const id = await page.evaluate('document.activeElement && document.activeElement.closest("#job-rows") ? document.activeElement.dataset.id : null');
      if (typeof id === 'string') reached.add(id);
    }
    expect([...reached].sort()).toEqual([big, done, gone].sort());
    await jobRow(page, gone).focus();
    await page.keyboard.press('Enter');
    await page.locator('#detail-fields [data-field="deleted"]').waitFor({ timeout: WAIT_MS });
    for (const button of ['[data-download="all"]', '[data-action="resume"]']) expect(await page.locator(`#job-detail ${button}`).isDisabled()).toBe(true);

    // The running job, opened with the keyboard; focus survives the page's 2 s polls.
    await jobRow(page, big).focus();
    await page.keyboard.press('Enter');
    await page.locator('#job-detail[data-status="running"]').waitFor({ timeout: WAIT_MS });
    await sleep(2_500);
    expect(await page.evaluate('document.activeElement.dataset.id')).toBe(big);
    expect(await page.locator('#job-detail [data-action="resume"]').isDisabled()).toBe(true);
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, '2-running-by-keyboard.png'), fullPage: true });

    // Its rows so far, marked partial, downloaded through the page.
    expect(await page.locator('#job-detail [data-download="all"]').textContent()).toBe('Download partial all');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#job-detail [data-download="all"]')]);
    expect(download.suggestedFilename()).toMatch(/\.partial\.csv$/);
    const lines = fs.readFileSync((await download.path())!, 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.length).toBeLessThan(1_001);
    await page.locator('#notice', { hasText: 'rows done so far' }).waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(shots, '3-partial-downloaded.png'), fullPage: true });
    await h.app.inject({ method: 'POST', url: `/api/jobs/${big}/cancel`, headers: bearer(account.key) });
    await context.close();
  }, 120_000);

  it('starts a job from a file: columns offered, the estimate shown before paying, followed to the end and downloaded; a file without a usable key column explained', async () => {
    const account = await newAccount(h, { credits: 1_000 });
    const context = await browser!.newContext({ acceptDownloads: true, bypassCSP: true, viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    await signIn(page, account);
    const before = (await h.engine.deps.billing.requireAccount(account.id)).credits;

    // Two columns: the page offers both; the email column is chosen, the id column would not do.
    const csv = `id;email\n${Array.from({ length: 12 }, (_, i) => `${i};${i % 2 === 0 ? 'maria.rossi' : 'john.smith'}@example.com`).join('\n')}\n`;
    await page.setInputFiles('#job-file', { name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await expect.poll(() => page.locator('#job-column option').allTextContents(), { timeout: WAIT_MS }).toEqual(['Detect automatically', 'id', 'email']);
    await page.selectOption('#job-type', 'gender');
    await page.selectOption('#job-column', 'email');
    expect(await page.locator('#job-start').isDisabled()).toBe(true);
    await page.click('#job-estimate');
    await page.locator('#estimate', { hasText: 'costs at most' }).waitFor({ timeout: WAIT_MS });
    const words = (await page.textContent('#estimate'))!;
    expect(words).toContain('12 rows: 12 valid');
    expect(words).toContain('10 duplicates');
    expect(words).toContain('costs at most 2 credits; 1,000 are available');
    expect(await page.textContent('#job-start')).toBe('Start job (up to 2 credits)');
    // The estimate charged nothing and made no job.
    expect((await h.engine.deps.billing.requireAccount(account.id)).credits).toBe(before);
    expect(await page.locator('#job-rows tr').count()).toBe(0);
    await page.screenshot({ path: path.join(shots, '5-estimate.png'), fullPage: true });

    await page.click('#job-start');
    await page.locator('#job-detail[data-status="completed"]').waitFor({ timeout: WAIT_MS });
    const id = (await page.textContent('#detail-id'))!;
    expect(await page.locator('#job-rows tr').count()).toBe(1);
    expect((await h.engine.deps.billing.requireAccount(account.id)).credits).toBe(before - 2);
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#job-detail [data-download="all"]')]);
    const direct = await fetch(`${baseUrl}/api/jobs/${id}/download?filter=all`, { headers: bearer(account.key) });
    expect(fs.readFileSync((await download.path())!).equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    await page.screenshot({ path: path.join(shots, '6-started-and-completed.png'), fullPage: true });

    // A file whose only column holds no email addresses: said in words, and the column choice gets focus.
    await page.setInputFiles('#job-file', { name: 'codes.csv', mimeType: 'text/csv', buffer: Buffer.from('code\n123\n456\n') });
    await page.selectOption('#job-type', 'email_breaches');
    await page.click('#job-estimate');
    await page.locator('#estimate.error').waitFor({ timeout: WAIT_MS });
    expect(await page.textContent('#estimate')).toContain('Choose the key column above');
    expect(await page.evaluate('document.activeElement.id')).toBe('job-column');
    expect(await page.locator('#job-start').isDisabled()).toBe(true);
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, '7-no-key-column.png'), fullPage: true });
    await context.close();
  }, 120_000);

  it('makes a list and a monitor, runs it twice, shows the second run\'s results in the list\'s order with their changes, and downloads them', async () => {
    const account = await newAccount(h, { credits: 1_000 });
    const store = h.engine.deps.store;
    await importFirstBreaches(store, 8);
    const order = [7, 2, 5, 0, 3].map(emailTarget);
    const context = await browser!.newContext({ acceptDownloads: true, bypassCSP: true, viewport: { width: 1280, height: 1400 } });
    const page = await context.newPage();
    await signIn(page, account);
    await page.fill('#monitor-new-name', 'staff');
    await page.selectOption('#monitor-new-type', 'email');
    await page.fill('#monitor-new-targets', order.join('\n'));
    await page.click('#monitor-form button[type=submit]');
    const monitorRow = page.locator('#monitor-rows tr[data-id]');
    await monitorRow.waitFor({ timeout: WAIT_MS });
    const monitorId = (await monitorRow.getAttribute('data-id'))!;
    expect(await monitorRow.locator('td').nth(2).textContent()).toBe('5');

    const runs = async () =>
      ((await (await fetch(`${baseUrl}/api/agent/monitors/${monitorId}/runs`, { headers: bearer(account.key) })).json()) as { runs: { id: string; status: string }[] }).runs;
    const runOnce = async (n: number) => {
      await monitorRow.focus();
      await page.keyboard.press('Enter');
      await page.locator('#monitor-detail').waitFor({ state: 'visible', timeout: WAIT_MS });
      await page.click('#monitor-run');
      await expect.poll(async () => (await runs()).length, { timeout: WAIT_MS }).toBe(n);
      const run = (await runs())[0]!;
      await driveRuns(h.engine, account.id, [{ monitorId, runId: run.id }], WAIT_MS);
      await page.locator(`#run-rows tr[data-id="${run.id}"][data-status="completed"]`).waitFor({ timeout: WAIT_MS });
      return run.id;
    };
    await runOnce(1);
    await importMoreBreaches(store, 8);
    const second = await runOnce(2);

    await page.locator(`#run-rows tr[data-id="${second}"]`).focus();
    await page.keyboard.press('Enter');
    await page.locator('#run-results').waitFor({ state: 'visible', timeout: WAIT_MS });
    await expect.poll(() => page.locator('#result-rows tr').count(), { timeout: WAIT_MS }).toBe(5);
    expect(await page.locator('#result-rows tr').evaluateAll((rows) => rows.map((r) => r.getAttribute("data-target")))).toEqual(order);
    const changed = page.locator(`#result-rows tr[data-target="${emailTarget(3)}"] td`);
    expect(await changed.nth(1).textContent()).toBe('yes');
    expect(await changed.nth(2).textContent()).toContain('breached: false → true');
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, '8-monitor-results.png'), fullPage: true });

    await page.check('#changes-only');
    await expect.poll(() => page.locator('#result-rows tr').count(), { timeout: WAIT_MS }).toBe(1);
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#results-download')]);
    const direct = await fetch(`${baseUrl}/api/monitors/${monitorId}/runs/${second}/results/download?changes_only=true`, { headers: bearer(account.key) });
    expect(direct.status).toBe(200);
    const saved = fs.readFileSync((await download.path())!);
    expect(saved.equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    expect(saved.toString('utf8')).toContain(emailTarget(3));
    await context.close();
  }, 180_000);

  it('a job paused for credits is explained in words with what to do, and resume is not offered while none are available', async () => {
    const poor = await newAccount(h, { credits: 20 });
    const paused = await upload(poor, 'too-big.csv', emails(60, 'poor'));
    await expect.poll(async () => (await apiJob(poor, paused)).status, { timeout: WAIT_MS }).toBe('paused');
    expect((await apiJob(poor, paused)).reason).toBe('insufficient_credits');

    const context = await browser!.newContext({ acceptDownloads: true, bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page, poor);
    await jobRow(page, paused).focus();
    await page.keyboard.press(' ');
    await page.locator('#job-detail[data-status="paused"]').waitFor({ timeout: WAIT_MS });
    const words = (await page.textContent('#detail-reason'))!;
    expect(words).toContain('ran out of credits');
    expect(words).toMatch(/needs up to 40 credits/);
    expect(words).toContain('has 0 available');
    expect(words).toContain('top up');
    expect(words).not.toContain('insufficient_credits');
    expect(await page.locator('#job-detail [data-action="resume"]').isDisabled()).toBe(true);
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, '4-paused-for-credits.png'), fullPage: true });

    // A paused job's rows so far, and a cancelled one's, download marked partial.
    for (const status of ['paused', 'cancelled']) {
      if (status === 'cancelled') {
        await page.click('#job-detail [data-action="cancel"]');
        await page.locator('#job-detail[data-status="cancelled"]').waitFor({ timeout: WAIT_MS });
      }
      expect(await page.textContent('#job-detail [data-download="all"]')).toBe('Download partial all');
      const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#job-detail [data-download="all"]')]);
      expect(download.suggestedFilename()).toBe(`${paused}-all.partial.csv`);
      expect(fs.readFileSync((await download.path())!, 'utf8').trim().split('\n')).toHaveLength(21);
    }
    await context.close();
  }, 120_000);
});
