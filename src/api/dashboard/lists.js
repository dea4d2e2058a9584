// @ts-check
// The dashboard's lists (issue 33): the account's target lists, a CSV uploaded into a new one (its
// target column chosen from the file's header, the rows the API left out shown as it reports them:
// count by code and the first examples with their row), a list's targets page by page in its
// order, and deleting one. Built with createElement and textContent only: targets come from customers.

import { offerColumns } from './csv-columns.js';
import { $, openableRows, row } from './dom.js';

/**
 * A list as GET /api/lists shows it.
 * @typedef {object} ListView
 * @property {string} id
 * @property {string} name
 * @property {string} type
 * @property {string} status
 * @property {number} target_count
 * @property {number} invalid_count
 * @property {number} duplicate_count
 * @property {Record<string, number>} invalid_by_code
 * @property {string} created_at
 */
/** @typedef {{ count: number, by_code: Record<string, number>, examples: { row: number, value: string, code: string }[] }} InvalidView */
/** @typedef {{ targets: { target: string, position: number }[], total: number, limit: number, offset: number }} TargetPage */
/**
 * What the page lends this panel.
 * @typedef {object} ListDeps
 * @property {<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => Promise<T>} api
 * @property {(path: string, form: FormData) => Promise<any>} postForm
 * @property {(message: string, isError?: boolean) => void} notify
 * @property {(tr: HTMLTableRowElement, label: string, open: () => void) => void} operable
 * @property {(body: HTMLElement, render: () => void) => void} keepingFocus
 * @property {(lists: ListView[]) => void} listsChanged the monitor form offers the ready lists
 */

/** A page of targets: enough to check a list by eye, small enough for any list. */
export const TARGET_PAGE = 20;

/** Codes of a file the API refused whole, where choosing another column is the fix. */
const COLUMN_CODES = new Set(['no_key_column', 'column_not_found', 'ambiguous_column']);

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ ($(id));
/** @param {number} n */
const count = (n) => n.toLocaleString('en');
/**
 * @param {number} n
 * @param {string} one
 */
const plural = (n, one) => `${count(n)} ${one}${n === 1 ? '' : 's'}`;
/** @param {Record<string, number>} byCode */
const codesInWords = (byCode) =>
  Object.entries(byCode)
    .map(([code, n]) => `${code} ${count(n)}`)
    .join(', ');

/** @param {ListDeps} deps */
export function listsPanel(deps) {
  const state = {
    /** @type {ListView[]} */
    lists: [],
    /** @type {string | null} */
    list: null,
    offset: 0,
  };

  function renderLists() {
    openableRows(deps, $('list-rows'), state.lists, (l) => ({
      id: l.id,
      cells: [l.name, l.type, l.status, count(l.target_count), count(l.duplicate_count), count(l.invalid_count), new Date(l.created_at).toLocaleString()],
      label: `List ${l.name}, ${l.type}, ${count(l.target_count)} targets`,
      selected: l.id === state.list,
      open: () => {
        state.list = l.id;
        state.offset = 0;
        // Now, not when the targets arrive: a delete asked meanwhile must not be undone by the load.
        hideConfirm();
        renderLists();
        void loadTargets();
      },
    }));
    $('no-lists').hidden = state.lists.length > 0;
    const open = state.lists.find((l) => l.id === state.list);
    $('list-detail').hidden = !open;
    if (!open) return;
    $('list-name').textContent = open.name;
    $('list-summary').textContent =
      `${plural(open.target_count, `${open.type} target`)}, ${open.status}. ` +
      (open.invalid_count ? `${plural(open.invalid_count, 'invalid row')} left out (${codesInWords(open.invalid_by_code)}). ` : '') +
      (open.duplicate_count ? `${plural(open.duplicate_count, 'duplicate')} added once.` : '');
  }

  async function loadLists() {
    /** @type {{ lists: ListView[] }} */
    const answer = await deps.api('GET', '/api/lists');
    state.lists = answer.lists;
    if (state.list && !state.lists.some((l) => l.id === state.list)) state.list = null;
    renderLists();
    deps.listsChanged(state.lists);
  }

  async function loadTargets() {
    const id = state.list;
    if (!id) return;
    /** @type {TargetPage} */
    const page = await deps.api('GET', `/api/lists/${encodeURIComponent(id)}/targets?limit=${TARGET_PAGE}&offset=${state.offset}`);
    const body = $('list-target-rows');
    body.replaceChildren();
    for (const t of page.targets) body.append(row([t.position, t.target]));
    const last = Math.min(page.offset + page.targets.length, page.total);
    $('list-page').textContent = page.total === 0 ? 'No targets.' : `Targets ${count(page.offset + 1)} to ${count(last)} of ${count(page.total)}`;
    /** @type {HTMLButtonElement} */ ($('list-prev')).disabled = page.offset === 0;
    /** @type {HTMLButtonElement} */ ($('list-next')).disabled = last >= page.total;
  }

  /** @param {number} by */
  function turn(by) {
    state.offset = Math.max(0, state.offset + by);
    loadTargets().catch((error) => deps.notify(`Could not load the targets: ${error.message}`, true));
  }

  /** The outcome area, emptied before each upload. */
  function clearOutcome() {
    $('list-outcome').textContent = '';
    $('list-outcome').className = '';
    $('list-invalid').hidden = true;
    $('list-invalid-rows').replaceChildren();
  }

  /**
   * What the API made of the file: targets added once each, duplicates, and the rows left out, as
   * its `invalid` reports them (count, by code, the first examples with their row).
   * @param {ListView & { invalid: InvalidView }} list
   */
  function showOutcome(list) {
    $('list-outcome').textContent =
      `List ${list.name}: ${plural(list.target_count, 'target')} added, ${plural(list.duplicate_count, 'duplicate')} added once, ` +
      `${plural(list.invalid.count, 'invalid row')} left out${list.invalid.count ? ` (${codesInWords(list.invalid.by_code)})` : ''}.`;
    const body = $('list-invalid-rows');
    for (const e of list.invalid.examples) body.append(row([e.row, e.value, e.code]));
    $('list-invalid').hidden = list.invalid.examples.length === 0;
    $('list-invalid-more').textContent =
      list.invalid.count > list.invalid.examples.length ? `The first ${count(list.invalid.examples.length)} of ${count(list.invalid.count)} are shown.` : '';
  }

  /**
   * A file refused whole: the API's code and message, and the field to fix gets focus.
   * @param {unknown} error
   */
  function showRefusal(error) {
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
    const message = error instanceof Error ? error.message : String(error);
    const fix = COLUMN_CODES.has(code)
      ? ' Choose the target column above, then upload again.'
      : code === 'unknown_country'
        ? ' Give a two-letter country code such as DE, or leave it empty.'
        : code === 'quota_exceeded'
          ? ' Delete a list you no longer need, or ask your Sluice operator for a larger quota.'
          : '';
    $('list-outcome').textContent = `The file was refused${code ? ` (${code})` : ''}: ${message}${fix}`;
    $('list-outcome').className = 'error';
    if (COLUMN_CODES.has(code)) $('list-column').focus();
    else if (code === 'unknown_country') $('list-country').focus();
  }

  /** Every field before the file: the API reads them first. */
  function listForm() {
    const form = new FormData();
    form.append('name', field('list-new-name').value.trim());
    form.append('type', /** @type {HTMLSelectElement} */ ($('list-new-type')).value);
    const column = /** @type {HTMLSelectElement} */ ($('list-column')).value;
    if (column !== '') form.append('column', column);
    const country = field('list-country').value.trim().toUpperCase();
    if (country !== '') form.append('default_country', country);
    const file = field('list-file').files?.[0];
    if (file) form.append('file', file, file.name);
    return form;
  }

  async function upload() {
    clearOutcome();
    try {
      /** @type {ListView & { invalid: InvalidView }} */
      const list = await deps.postForm('/api/lists', listForm());
      showOutcome(list);
      state.list = list.id;
      state.offset = 0;
      hideConfirm();
      await loadLists();
      await loadTargets();
    } catch (error) {
      showRefusal(error);
    }
  }

  function hideConfirm() {
    $('list-confirm').hidden = true;
    $('list-delete').hidden = false;
  }

  /** Deleting asks once more in the page (no browser dialog): focus goes to the safe choice. */
  function askDelete() {
    const open = state.lists.find((l) => l.id === state.list);
    if (!open) return;
    $('list-confirm-text').textContent = `Delete list ${open.name} and its ${count(open.target_count)} targets? Monitors made from it keep theirs.`;
    $('list-confirm').hidden = false;
    $('list-delete').hidden = true;
    $('list-keep').focus();
  }

  async function remove() {
    const open = state.lists.find((l) => l.id === state.list);
    if (!open) return;
    await deps.api('DELETE', `/api/lists/${encodeURIComponent(open.id)}`);
    hideConfirm();
    state.list = null;
    await loadLists();
    deps.notify(`List ${open.name} deleted.`);
    $('lists-heading').focus();
  }

  $('list-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void upload();
  });
  $('list-file').addEventListener('change', () => {
    clearOutcome();
    void offerColumns(/** @type {HTMLSelectElement} */ ($('list-column')), field('list-file').files?.[0]);
  });
  $('list-prev').addEventListener('click', () => turn(-TARGET_PAGE));
  $('list-next').addEventListener('click', () => turn(TARGET_PAGE));
  $('list-delete').addEventListener('click', askDelete);
  $('list-keep').addEventListener('click', () => {
    hideConfirm();
    $('list-delete').focus();
  });
  $('list-delete-confirm').addEventListener('click', () => remove().catch((error) => deps.notify(`Could not delete the list: ${error.message}`, true)));

  return {
    /** At sign-in, and after the monitor form made a list. */
    refresh: loadLists,
    reset() {
      Object.assign(state, { lists: [], list: null, offset: 0 });
      for (const id of ['list-rows', 'list-target-rows']) $(id).replaceChildren();
      clearOutcome();
      field('list-file').value = '';
      $('list-detail').hidden = true;
    },
  };
}
