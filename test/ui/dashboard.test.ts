import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/jobs/worker.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { DASHBOARD_CSP } from '../../src/api/routes/dashboard-routes.js';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import type { WebhookSender } from '../../src/webhooks/webhook-sender.js';
import { bearer, closeHarnesses, listen, newAccount, openApiHarness, type ApiHarness, type TestAccount } from '../support/api-harness.js';
import { launchChromium } from '../support/chromium.js';

/**
 * The dashboard in a real headless Chromium (Debian's `chromium`), against a real server on
 * loopback: sign-in, a job's live progress, a download, a cancel, sign-out, and a hostile file
 * name shown as text. No browser is a failure that says so, unless SLUICE_UI_TESTS=off.
 */

const SKIP = process.env.SLUICE_UI_TESTS === 'off';
const HOSTILE_NAME = '<img src=x onerror=alert(1)>.csv';
const ROWS = 1_000;
/** Each lookup batch waits this long, so that the job runs for several of the page's 2 s polls. */
const BATCH_PAUSE_MS = 200;
const WAIT_MS = 30_000;

let h: ApiHarness;
let account: TestAccount;
let baseUrl: string;
let browser: Browser | undefined;
let stopWorker = false;
let worker: Promise<void> | undefined;
let sender: WebhookSender | undefined;
let sending: Promise<void> | undefined;
let hookUrl: string;
/** The customer's webhook receiver: accepts every delivery. */
const receiver = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
});
const shots = path.resolve('test-results', `dashboard-${new Date().toISOString().replace(/[:.]/g, '-')}`);

async function upload(name: string, csv: string): Promise<{ id: string }> {
  const form = new FormData();
  form.append('type', 'gender');
  form.append('file', new Blob([csv], { type: 'text/csv' }), name);
  const response = await fetch(`${baseUrl}/api/jobs/bulk`, { method: 'POST', headers: bearer(account.key), body: form });
  expect(response.status).toBe(202);
  return (await response.json()) as { id: string };
}

async function apiJob(id: string): Promise<{ status: string; rows: { processed: number } }> {
  return (await (await fetch(`${baseUrl}/api/jobs/${id}`, { headers: bearer(account.key) })).json()) as { status: string; rows: { processed: number } };
}

const jobRow = (page: Page, id: string) => page.locator(`#job-rows tr[data-id="${id}"]`);
const detailValue = (page: Page, field: string) => page.locator(`#detail-fields [data-field="${field}"] dd`);

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

describe.skipIf(SKIP)('the dashboard in a real browser', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    h = await openApiHarness({ SLUICE_CHUNK_ROWS: '100', SLUICE_BATCH_ROWS: '10', SLUICE_POLL_MS: '20', SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    baseUrl = await listen(h);
    account = await newAccount(h, { credits: 10_000 });
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
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/sluice-hook`;
    sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
    sending = sender.run();
    fs.mkdirSync(shots, { recursive: true });
    console.log(`dashboard screenshots: ${shots}`);
  }, 60_000);

  afterAll(async () => {
    stopWorker = true;
    sender?.stop();
    await Promise.all([worker, sending]);
    await new Promise((resolve) => receiver.close(resolve));
    await browser?.close();
    await closeHarnesses();
  });

  it('signs in with a key kept out of the URL, shows live progress, downloads, cancels, and shows a hostile file name as text', async () => {
    const dialogs: string[] = [];
    const context = await browser!.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const csv = `email\n${Array.from({ length: ROWS }, (_, i) => `maria.rossi${i}@example.com`).join('\n')}\n`;
    const big = await upload('contacts.csv', csv);
    const hook = await fetch(`${baseUrl}/api/webhooks`, {
      method: 'POST',
      headers: { ...bearer(account.key), 'content-type': 'application/json' },
      body: JSON.stringify({ url: hookUrl, events: ['bulk.completed'] }),
    });
    expect(hook.status).toBe(200);
    const webhookId = ((await hook.json()) as { result: { id: string } }).result.id;

    // The big job is charging already: the balance the page shows is read at sign-in, so it lies
    // between the balance before the page loaded and the one after it shows (charges only lower it).
    const before = (await h.engine.deps.billing.requireAccount(account.id)).credits;
    const response = await page.goto(baseUrl);
    expect(response!.status()).toBe(200);
    expect(response!.headers()['content-security-policy']).toBe(DASHBOARD_CSP);
    await page.fill('#api-key', account.key);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('#signed-in', { state: 'visible' });
    expect(page.url()).not.toContain(account.key);
    expect(await page.evaluate('sessionStorage.getItem("sluice.apiKey")')).toBe(account.key);
    const shown = Number((await page.textContent('#credits'))!.replace(/,/g, ''));
    const after = (await h.engine.deps.billing.requireAccount(account.id)).credits;
    expect(shown).toBeLessThanOrEqual(before);
    expect(shown).toBeGreaterThanOrEqual(after);
    expect(before).toBeLessThanOrEqual(10_000);

    // Live progress: the same job's processed count moves between two polls of the page.
    await jobRow(page, big.id).click();
    await page.locator('#job-detail[data-status="running"]').waitFor({ timeout: WAIT_MS });
    const first = await detailValue(page, 'processed').textContent();
    await shoot(page, '1-running');
    await expect.poll(() => detailValue(page, 'processed').textContent(), { timeout: WAIT_MS, interval: 200 }).not.toBe(first);
    const second = await detailValue(page, 'processed').textContent();
    await shoot(page, '2-running-later');
    expect(Number(second!.replace(/,/g, ''))).toBeGreaterThan(Number((first ?? '0').replace(/,/g, '')));

    // A file name from a customer is text, never markup.
    const hostile = await upload(HOSTILE_NAME, 'email\njohn.smith@example.com\n');
    await jobRow(page, hostile.id).waitFor({ timeout: WAIT_MS });
    expect(await jobRow(page, hostile.id).locator('td').first().textContent()).toBe(HOSTILE_NAME);
    expect(await page.locator('img').count()).toBe(0);

    // Cancel: the big job, while it still runs (ROWS paced batches take far longer than the steps above).
    await jobRow(page, big.id).click();
    expect((await apiJob(big.id)).status).toBe('running');
    await page.click('#job-detail [data-action="cancel"]');
    await page.locator('#job-detail[data-status="cancelled"]').waitFor({ timeout: WAIT_MS });
    expect((await apiJob(big.id)).status).toBe('cancelled');

    // A finished job: its download through the page is byte for byte the job's `all` file.
    const finished = hostile.id;
    await jobRow(page, finished).click();
    expect(await detailValue(page, 'file').textContent()).toBe(HOSTILE_NAME);
    await page.locator('#job-detail[data-status="completed"]').waitFor({ timeout: WAIT_MS });
    await shoot(page, '3-completed');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#job-detail [data-download="all"]')]);
    const downloaded = fs.readFileSync((await download.path())!);
    const direct = await fetch(`${baseUrl}/api/jobs/${finished}/download?filter=all`, { headers: bearer(account.key) });
    expect(direct.status).toBe(200);
    expect(downloaded.equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    expect(download.url()).not.toContain(account.key);

    // The webhook and the delivery of the finished job's bulk.completed, once the receiver has had it.
    const delivered = async () => {
      const answer = await fetch(`${baseUrl}/api/webhooks/deliveries?webhook_id=${webhookId}`, { headers: bearer(account.key) });
      const body = (await answer.json()) as unknown;
      if (!Array.isArray(body)) throw new Error(`deliveries: HTTP ${answer.status} ${JSON.stringify(body)}`);
      return body.map((d: { status: string }) => d.status);
    };
    // Slow polls: the page's own polls and these share the account's rate limit.
    await expect.poll(delivered, { timeout: WAIT_MS, interval: 1_000 }).toContain('success');
    await page.click('#webhooks-refresh');
    await page.locator(`#webhook-rows tr[data-id="${webhookId}"]`).click();
    const deliveryRow = page.locator('#delivery-rows tr', { hasText: 'bulk.completed' }).first();
    await deliveryRow.waitFor({ timeout: WAIT_MS });
    expect(await deliveryRow.locator('td').nth(1).textContent()).toBe('success');
    expect(await page.locator(`#webhook-rows tr[data-id="${webhookId}"] td`).first().textContent()).toBe(hookUrl);
    await shoot(page, '4-webhooks');

    await page.click('#sign-out');
    await page.waitForSelector('#sign-in', { state: 'visible' });
    expect(await page.evaluate('sessionStorage.getItem("sluice.apiKey")')).toBeNull();
    expect(await page.locator('#job-rows tr').count()).toBe(0);

    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  }, 120_000);
});
