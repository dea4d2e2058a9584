// @ts-check
// Checked by tsc (src/api/dashboard/tsconfig.json, part of `npm run typecheck`): the JSDoc types
// below are what the page reads from the API's answers.
// The Sluice dashboard: a page over the public API and nothing else. Every value shown comes from
// customers (file names, webhook URLs, response bodies), so the DOM is built with createElement and
// textContent only: no innerHTML, so no value can become markup.

import { offerColumns } from './csv-columns.js';
import { $, row } from './dom.js';
import { canResume, reasonInWords } from './job-reasons.js';
import { listsPanel } from './lists.js';
import { monitorsPanel } from './monitors.js';

const KEY_ITEM = 'sluice.apiKey';
const POLL_MS = 2000;
const JOB_PAGE = 50;
const ACTIVE = new Set(['queued', 'running', 'paused']);

/**
 * A job as GET /api/jobs lists it: the fields this page reads.
 * @typedef {object} JobView
 * @property {string} id
 * @property {string} type
 * @property {string} status
 * @property {string | null} input_name
 * @property {string | null} [reason]
 * @property {string | null} [error_message]
 * @property {boolean} [stalled]
 * @property {{ total: number | null, processed: number, found: number, invalid: number, duplicate: number, error: number }} rows
 * @property {number} [percent]
 * @property {number} [credits_used]
 * @property {number | null} [rows_per_second]
 * @property {number | null} [eta_seconds]
 * @property {string | null} [last_progress_at]
 * @property {string | null} created_at
 * @property {string | null} [started_at]
 * @property {string | null} [finished_at]
 * @property {unknown} [downloads]
 * @property {string | null} [deleted_at]
 */
/**
 * @typedef {object} WebhookView
 * @property {string} id
 * @property {string} kind
 * @property {string | null} [url]
 * @property {string | null} [telegram_chat_id]
 * @property {string[]} [events]
 * @property {boolean} is_active
 * @property {string | null} created_at
 */
/**
 * @typedef {object} DeliveryView
 * @property {string} event_type
 * @property {string} status
 * @property {number} attempts
 * @property {number | null} response_status
 * @property {string | null} [response_body]
 * @property {string | null} [error_code]
 * @property {string | null} [last_attempt_at]
 */
/** @typedef {{ credits: number, reserved: number, available: number }} AccountView */
/** @typedef {{ at: number, processed: number, rate: number | null }} Sample */

/** @param {string} id */
const input = (id) => /** @type {HTMLInputElement} */ ($(id));
/**
 * @param {ParentNode} parent
 * @param {string} selector
 */
const buttons = (parent, selector) => /** @type {NodeListOf<HTMLButtonElement>} */ (parent.querySelectorAll(selector));
/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

const state = {
  /** @type {JobView[]} */
  jobs: [],
  /** @type {string | null} */
  selectedJob: null,
  /** @type {string | null} */
  selectedWebhook: null,
  /** @type {number | undefined} */
  timer: undefined,
  /** @type {Map<string, Sample>} */
  samples: new Map(),
  /** The account's available credits at the last refresh: whether a job paused for credits can go on. */
  available: 0,
};

/** Statuses whose rows done so far can be downloaded, marked partial (GET /api/jobs/{id}/download?partial=true). */
const PARTIAL = new Set(['running', 'paused', 'cancelled', 'failed']);

/** The key lives in this tab's sessionStorage only: never in a URL, a cookie or localStorage. */
const key = {
  get: () => sessionStorage.getItem(KEY_ITEM),
  /** @param {string} value */
  set: (value) => sessionStorage.setItem(KEY_ITEM, value),
  clear: () => sessionStorage.removeItem(KEY_ITEM),
};

class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {string} [code] the API's stable error code, when it gave one
   */
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code ?? '';
  }
}

/**
 * The answer's JSON body, as the caller's type says it is (the API's schema, test/api/openapi.test.ts).
 * @template T
 * @param {'GET' | 'POST' | 'DELETE'} method
 * @param {string} path
 * @param {unknown} [json] a JSON body
 * @returns {Promise<T>}
 */
async function api(method, path, json) {
  const response = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${key.get()}`, accept: 'application/json', ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    cache: 'no-store',
    credentials: 'omit',
  });
  const text = await response.text();
  /** @type {any} */
  let body = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, (body && typeof body.error === 'string' && body.error) || `HTTP ${response.status}`, body?.code);
  return body;
}

/**
 * @param {string} tag
 * @param {unknown} [text]
 * @param {string} [className]
 */
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

/**
 * @param {string} message
 * @param {boolean} [isError]
 */
function notify(message, isError = false) {
  const notice = $('notice');
  notice.textContent = message;
  notice.className = isError ? 'error' : '';
  notice.hidden = message === '';
}

/** @param {unknown} n */
const number = (n) => (typeof n === 'number' ? n.toLocaleString('en') : '');
/** @param {string | null | undefined} iso */
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

/** @param {number | null} seconds */
function duration(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return '';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
}

/**
 * Rows per second and time left: the job view's own figures where the server gives them; else
 * measured here from two polls, so that the page works against a server without them.
 */
/**
 * @param {JobView} job
 * @returns {{ rate: number | null, eta: number | null }}
 */
function speed(job) {
  const previous = state.samples.get(job.id);
  const now = Date.now();
  let measured = previous?.rate ?? null;
  if (previous && job.rows.processed !== previous.processed && now > previous.at) {
    measured = ((job.rows.processed - previous.processed) * 1000) / (now - previous.at);
  }
  if (!previous || job.rows.processed !== previous.processed) state.samples.set(job.id, { at: now, processed: job.rows.processed, rate: measured });
  if (job.status !== 'running') return { rate: null, eta: null };
  const rate = typeof job.rows_per_second === 'number' ? job.rows_per_second : measured;
  const left = job.rows.total === null ? null : job.rows.total - job.rows.processed;
  const eta = typeof job.eta_seconds === 'number' ? job.eta_seconds : rate && left !== null ? left / rate : null;
  return { rate, eta };
}

/** @param {JobView} job */
function statusCell(job) {
  const text = job.stalled === true ? `${job.status} (stalled)` : job.status;
  const cell = el('span', text, `status status-${job.status}`);
  // A deleted job keeps its record, not its files: marked, so nobody reaches for a download.
  if (job.deleted_at) cell.append(' ', el('span', 'deleted', 'deleted'));
  return cell;
}

/**
 * A row that takes focus and opens with Enter or Space, as with a click (issue 33: every row
 * reachable and operable from the keyboard).
 * @param {HTMLTableRowElement} tr
 * @param {string} label
 * @param {() => void} open
 */
function operable(tr, label, open) {
  tr.tabIndex = 0;
  tr.setAttribute('aria-label', label);
  tr.addEventListener('click', open);
  tr.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' && event.key !== ' ') return;
    event.preventDefault();
    open();
  });
}

/**
 * Re-rendering replaces the rows; the row that had focus gets it back, so polling never throws the
 * keyboard user back to the top of the page.
 * @param {HTMLElement} body
 * @param {() => void} render
 */
function keepingFocus(body, render) {
  const focused = document.activeElement instanceof HTMLElement && body.contains(document.activeElement) ? document.activeElement.dataset.id : undefined;
  render();
  if (focused === undefined) return;
  const again = /** @type {HTMLElement | null} */ (body.querySelector(`tr[data-id="${CSS.escape(focused)}"]`));
  again?.focus();
}

/** @param {JobView} job */
function progressCell(job) {
  const wrap = el('span');
  const bar = document.createElement('progress');
  bar.max = 100;
  bar.value = typeof job.percent === 'number' ? job.percent : 0;
  wrap.append(bar, ` ${job.percent ?? 0}%`);
  return wrap;
}

function renderJobs() {
  keepingFocus($('job-rows'), renderJobRows);
  renderDetail();
}

function renderJobRows() {
  const body = $('job-rows');
  body.replaceChildren();
  /** @type {Map<string, number>} */
  const byStatus = new Map();
  for (const job of state.jobs) {
    byStatus.set(job.status, (byStatus.get(job.status) ?? 0) + 1);
    const { rate, eta } = speed(job);
    const total = job.rows.total === null ? '?' : number(job.rows.total);
    const tr = row([
      job.input_name ?? job.id,
      job.type,
      statusCell(job),
      `${number(job.rows.processed)} / ${total}`,
      progressCell(job),
      rate === null ? '' : number(Math.round(rate)),
      duration(eta),
      number(job.rows.found),
      number(job.rows.error),
      when(job.created_at),
    ]);
    tr.dataset.id = job.id;
    tr.dataset.status = job.status;
    if (job.deleted_at) tr.dataset.deleted = 'true';
    if (job.id === state.selectedJob) tr.className = 'selected';
    operable(tr, `Job ${job.input_name ?? job.id}, ${job.status}${job.deleted_at ? ', deleted' : ''}`, () => {
      state.selectedJob = job.id;
      renderJobs();
    });
    body.append(tr);
  }
  $('no-jobs').hidden = state.jobs.length > 0;
  $('job-counts').textContent = [...byStatus].map(([status, n]) => `${status} ${n}`).join(' · ');
}

function renderDetail() {
  const job = state.jobs.find((j) => j.id === state.selectedJob);
  const section = $('job-detail');
  section.hidden = !job;
  if (!job) return;
  section.dataset.status = job.status;
  $('detail-id').textContent = job.id;
  /** @type {[string, unknown][]} */
  const fields = [
    ['File', job.input_name],
    ['Type', job.type],
    ['Status', job.stalled === true ? `${job.status} (stalled)` : job.status],
    ['Deleted', job.deleted_at ? `${when(job.deleted_at)}: its files are gone` : null],
    ['Failure', job.error_message],
    ['Total rows', number(job.rows.total)],
    ['Processed', number(job.rows.processed)],
    ['Found', number(job.rows.found)],
    ['Invalid', number(job.rows.invalid)],
    ['Duplicate', number(job.rows.duplicate)],
    ['Errors', number(job.rows.error)],
    ['Credits used', number(job.credits_used)],
    ['Last progress', when(job.last_progress_at)],
    ['Created', when(job.created_at)],
    ['Started', when(job.started_at)],
    ['Finished', when(job.finished_at)],
  ];
  const list = $('detail-fields');
  list.replaceChildren();
  for (const [label, value] of fields) {
    if (value === null || value === undefined || value === '') continue;
    const item = el('div');
    item.dataset.field = label.toLowerCase().replace(/ /g, '-');
    item.append(el('dt', label), el('dd', value));
    list.append(item);
  }
  $('detail-reason').textContent = job.deleted_at ? '' : reasonInWords(job, state.available);
  // Finished: the file; running, paused, cancelled or failed: the rows done so far, marked partial.
  const partial = job.status !== 'completed' && PARTIAL.has(job.status);
  for (const button of buttons(section, '[data-download]')) {
    button.disabled = Boolean(job.deleted_at) || !(job.downloads || partial);
    button.textContent = `Download ${partial ? 'partial ' : ''}${button.dataset.download === 'all' ? 'all' : button.dataset.download}`;
  }
  /** @type {Record<string, boolean>} */
  const enabled = {
    resume: !job.deleted_at && canResume(job, state.available),
    cancel: ACTIVE.has(job.status),
    'retry-failed': (job.status === 'completed' || job.status === 'failed') && job.rows.error > 0,
  };
  for (const button of buttons(section, '[data-action]')) button.disabled = !enabled[button.dataset.action ?? ''];
}

/** @param {WebhookView[]} webhooks */
function renderWebhooks(webhooks) {
  const body = $('webhook-rows');
  body.replaceChildren();
  for (const hook of webhooks) {
    const tr = row([hook.url ?? hook.telegram_chat_id ?? hook.kind, (hook.events ?? []).join(', '), hook.is_active ? 'yes' : 'no', when(hook.created_at)]);
    tr.dataset.id = hook.id;
    if (hook.id === state.selectedWebhook) tr.className = 'selected';
    operable(tr, `Webhook ${hook.url ?? hook.telegram_chat_id ?? hook.kind}`, () => {
      state.selectedWebhook = hook.id;
      keepingFocus(body, () => renderWebhooks(webhooks));
      void loadDeliveries();
    });
    body.append(tr);
  }
  $('no-webhooks').hidden = webhooks.length > 0;
}

async function loadWebhooks() {
  /** @type {{ result?: WebhookView[] }} */
  const answer = await api('GET', '/api/webhooks?limit=50');
  renderWebhooks(answer.result ?? []);
}

async function loadDeliveries() {
  const id = state.selectedWebhook;
  if (!id) return;
  /** @type {DeliveryView[] | null} */
  const deliveries = await api('GET', `/api/webhooks/deliveries?webhook_id=${encodeURIComponent(id)}`);
  const body = $('delivery-rows');
  body.replaceChildren();
  for (const d of Array.isArray(deliveries) ? deliveries : []) {
    const response = d.response_status === null ? d.error_code ?? '' : `${d.response_status} ${d.response_body ?? ''}`;
    body.append(row([d.event_type, d.status, d.attempts, response, when(d.last_attempt_at)]));
  }
  $('deliveries').hidden = false;
}

async function refresh() {
  const [account, jobs] = await Promise.all([
    /** @type {Promise<AccountView>} */ (api('GET', '/api/account')),
    /** @type {Promise<{ jobs: JobView[] }>} */ (api('GET', `/api/jobs?limit=${JOB_PAGE}`)),
  ]);
  $('credits').textContent = number(account.credits);
  $('reserved').textContent = number(account.reserved);
  $('available').textContent = number(account.available);
  state.available = account.available;
  state.jobs = jobs.jobs;
  renderJobs();
}

async function poll() {
  try {
    await refresh();
    await monitors.poll();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signOut('The key was refused; sign in again.');
    notify(`Could not refresh: ${messageOf(error)}`, true);
  }
  if (key.get()) state.timer = window.setTimeout(poll, POLL_MS);
}

async function signIn() {
  clearTimeout(state.timer);
  try {
    await refresh();
  } catch (error) {
    key.clear();
    notify(error instanceof ApiError && error.status === 401 ? 'That key was refused.' : `Sign-in failed: ${messageOf(error)}`, true);
    return;
  }
  notify('');
  $('sign-in-page').hidden = true;
  $('signed-in').hidden = false;
  $('sign-out').hidden = false;
  state.timer = window.setTimeout(poll, POLL_MS);
  loadWebhooks().catch((error) => notify(`Could not load webhooks: ${error.message}`, true));
  monitors.refresh().catch((error) => notify(`Could not load monitors: ${error.message}`, true));
  lists.refresh().catch((error) => notify(`Could not load lists: ${error.message}`, true));
}

/** @param {string} [message] */
function signOut(message = '') {
  clearTimeout(state.timer);
  key.clear();
  Object.assign(state, { jobs: [], selectedJob: null, selectedWebhook: null, samples: new Map() });
  for (const id of ['job-rows', 'webhook-rows', 'delivery-rows', 'detail-fields']) $(id).replaceChildren();
  $('signed-in').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in-page').hidden = false;
  input('api-key').value = '';
  input('job-file').value = '';
  resetEstimate();
  monitors.reset();
  lists.reset();
  notify(message, message !== '');
}

/** The download route's JSON form gives a presigned URL; the key never leaves the Authorization header. */
/** @param {string} filter */
async function download(filter) {
  const id = state.selectedJob ?? '';
  const job = state.jobs.find((j) => j.id === id);
  if (job && job.status !== 'completed' && PARTIAL.has(job.status)) return downloadPartial(id, filter);
  /** @type {{ download_url: string }} */
  const answer = await api('GET', `/api/jobs/${encodeURIComponent(id)}/download?filter=${filter}&format=json`);
  // The presigned URL answers with Content-Disposition: attachment, so this page stays where it is.
  window.location.assign(answer.download_url);
}

/**
 * An unfinished job's rows so far come as the CSV itself (no presigned URL), so it is fetched with
 * the key in the Authorization header and saved from a blob: the key still never goes in a URL.
 * @param {string} id
 * @param {string} filter
 */
async function downloadPartial(id, filter) {
  const response = await save(`/api/jobs/${encodeURIComponent(id)}/download?filter=${filter}&partial=true`);
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? '';
  notify(`Downloaded ${response.headers.get('x-sluice-rows-included') ?? 'the'} of ${response.headers.get('x-sluice-rows-total') ?? '?'} rows done so far (${name}).`);
}

/**
 * A file the API streams itself, fetched with the key in the Authorization header and saved from a
 * blob under the name the API gives.
 * @param {string} path
 */
async function save(path) {
  const response = await fetch(path, { headers: { authorization: `Bearer ${key.get()}` }, cache: 'no-store', credentials: 'omit' });
  if (!response.ok) throw new ApiError(response.status, `HTTP ${response.status}`);
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'sluice.csv';
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return response;
}

/** @param {string} action */
async function act(action) {
  const id = state.selectedJob ?? '';
  /** @type {JobView} */
  const job = await api('POST', `/api/jobs/${encodeURIComponent(id)}/${action}`);
  notify(`Job ${job.id}: ${job.status}`);
  await refresh();
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = input('api-key').value.trim();
  if (value === '') return;
  key.set(value);
  input('api-key').value = '';
  void signIn();
});
$('sign-out').addEventListener('click', () => signOut());
$('webhooks-refresh').addEventListener('click', () => {
  loadWebhooks()
    .then(loadDeliveries)
    .catch((error) => notify(`Could not load webhooks: ${error.message}`, true));
});
for (const button of buttons(document, '[data-download]')) {
  button.addEventListener('click', () => download(button.dataset.download ?? 'all').catch((error) => notify(`Download failed: ${error.message}`, true)));
}
for (const button of buttons(document, '[data-action]')) {
  button.addEventListener('click', () => act(button.dataset.action ?? '').catch((error) => notify(`${button.textContent} failed: ${error.message}`, true)));
}

/**
 * What POST /api/jobs/bulk?dry_run=true answers: what the job would do and cost.
 * @typedef {{ rows: number, valid: number, invalid: number, duplicates: number, repeats: number, credits_needed: number, available: number }} Estimate
 */

/** The form's values as the upload wants them: every field before the file (the API reads them first). */
function jobForm() {
  const form = new FormData();
  form.append('type', /** @type {HTMLSelectElement} */ ($('job-type')).value);
  const column = /** @type {HTMLSelectElement} */ ($('job-column')).value;
  if (column !== '') form.append('column', column);
  const country = input('job-country').value.trim().toUpperCase();
  if (country !== '') form.append('default_country', country);
  const file = input('job-file').files?.[0];
  if (file) form.append('file', file, file.name);
  return form;
}

/**
 * @param {boolean} dryRun
 * @returns {Promise<any>}
 */
async function sendJobForm(dryRun) {
  return postForm(`/api/jobs/bulk${dryRun ? '?dry_run=true' : ''}`, jobForm());
}

/**
 * A multipart upload (a job's or a list's file), with the key in the Authorization header; a refusal
 * throws an ApiError with the API's code and message.
 * @param {string} path
 * @param {FormData} form
 * @returns {Promise<any>}
 */
async function postForm(path, form) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.get()}`, accept: 'application/json' },
    body: form,
    cache: 'no-store',
    credentials: 'omit',
  });
  /** @type {any} */
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, (body && body.error) || `HTTP ${response.status}`, body?.code);
  return body;
}

/**
 * An upload refused, in words with the next step; the field to fix gets focus.
 * @param {unknown} error
 */
function uploadRefused(error) {
  const code = error instanceof ApiError ? error.code : '';
  if (code === 'no_key_column' || code === 'column_not_found' || code === 'ambiguous_column') {
    $('estimate').textContent = 'No column of this file could be used as the key column for this lookup. Choose the key column above, then estimate again.';
    $('job-column').focus();
  } else if (code === 'insufficient_credits') {
    $('estimate').textContent = `Not enough credits to start it: ${messageOf(error)} Ask your Sluice operator to top up the account.`;
  } else if (code === 'unknown_country') {
    $('estimate').textContent = 'That default country is not known: give a two-letter country code such as DE, or leave it empty.';
    $('job-country').focus();
  } else {
    $('estimate').textContent = `The file was refused: ${messageOf(error)}`;
  }
  $('estimate').className = 'error';
}

/** The estimate shown is for these values; changing any of them asks for a new one before paying. */
function resetEstimate() {
  /** @type {HTMLButtonElement} */ ($('job-start')).disabled = true;
  $('job-start').textContent = 'Start job';
  $('estimate').textContent = '';
  $('estimate').className = '';
}

/** The file's header row, read here, offered as the key column's choices. */
async function offerJobColumns() {
  resetEstimate();
  await offerColumns(/** @type {HTMLSelectElement} */ ($('job-column')), input('job-file').files?.[0]);
}

async function estimate() {
  resetEstimate();
  try {
    /** @type {Estimate} */
    const e = await sendJobForm(true);
    const fits = e.credits_needed <= e.available;
    $('estimate').textContent =
      `${number(e.rows)} rows: ${number(e.valid)} valid, ${number(e.invalid)} invalid, ${number(e.duplicates)} duplicates and ${number(e.repeats)} already paid for (free). ` +
      `It costs at most ${number(e.credits_needed)} credits; ${number(e.available)} are available.` +
      (fits ? '' : ' That is not enough: ask your Sluice operator to top up the account, or the job will pause when the credits run out.');
    const start = /** @type {HTMLButtonElement} */ ($('job-start'));
    start.disabled = false;
    start.textContent = `Start job (up to ${number(e.credits_needed)} credits)`;
  } catch (error) {
    uploadRefused(error);
  }
}

async function startJob() {
  try {
    /** @type {JobView} */
    const job = await sendJobForm(false);
    resetEstimate();
    notify(`Job started: ${job.input_name ?? job.id}.`);
    state.selectedJob = job.id;
    await refresh();
  } catch (error) {
    uploadRefused(error);
  }
}

$('job-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void estimate();
});
$('job-start').addEventListener('click', () => void startJob());
$('job-file').addEventListener('change', () => void offerJobColumns());
for (const id of ['job-type', 'job-column', 'job-country']) $(id).addEventListener('change', resetEstimate);

const lists = listsPanel({ api, postForm, notify, operable, keepingFocus, listsChanged: (all) => monitors.offerLists(all) });
const monitors = monitorsPanel({ api, save: async (path) => void (await save(path)), notify, operable, keepingFocus, listsChanged: () => lists.refresh() });

if (key.get()) void signIn();
