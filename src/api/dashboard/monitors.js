// @ts-check
// The dashboard's monitors (issue 33): make a monitor, at a chosen frequency, from a list or from
// pasted targets (which become a list), run it now,
// see its runs, each run's results with their changes, and download them. Built with createElement
// and textContent only, as dashboard.js: targets and values come from customers.

import { $, openableRows, row } from './dom.js';

/**
 * @typedef {object} MonitorView
 * @property {string} id
 * @property {string} name
 * @property {string} type
 * @property {string} status
 * @property {string} frequency
 * @property {number} target_count
 * @property {string | null} last_run_at
 * @property {string | null} next_run_at
 */
/**
 * @typedef {object} RunView
 * @property {string} id
 * @property {string} status
 * @property {string} trigger
 * @property {string} created_at
 * @property {{ total_records: number | null, changes_detected: number | null, credits_used: number | null }} stats
 */
/** @typedef {{ target: string, changes: Record<string, { old: unknown, new: unknown }> | null, has_changes: boolean }} ResultView */
/**
 * What the page lends this panel.
 * @typedef {object} PanelDeps
 * @property {<T>(method: 'GET' | 'POST', path: string, body?: unknown) => Promise<T>} api
 * @property {(path: string) => Promise<void>} save a download with the key in the Authorization header
 * @property {(message: string, isError?: boolean) => void} notify
 * @property {(tr: HTMLTableRowElement, label: string, open: () => void) => void} operable
 * @property {(body: HTMLElement, render: () => void) => void} keepingFocus
 * @property {() => Promise<void>} listsChanged the lists panel shows the list a monitor was made with
 */
/** @typedef {{ id: string, name: string, type: string, status: string, target_count: number }} ListChoice */

/** Spec 2.8's frequencies, in words. */
const FREQUENCY_WORDS = /** @type {Record<string, string>} */ ({ weekly: 'weekly', biweekly: 'every two weeks', monthly: 'monthly', quarterly: 'quarterly' });

/** @param {string | null | undefined} iso */
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');
/** @param {unknown} v */
const shown = (v) => (Array.isArray(v) ? (v.length === 0 ? '—' : v.join('; ')) : v === null || v === undefined ? '—' : String(v));

/** @param {ResultView['changes']} changes */
function changesInWords(changes) {
  if (!changes) return 'no change';
  return Object.entries(changes)
    .map(([field, c]) => `${field.replace(/_/g, ' ')}: ${shown(c.old)} → ${shown(c.new)}`)
    .join(', ');
}

/** @param {PanelDeps} deps */
export function monitorsPanel(deps) {
  const state = {
    /** @type {MonitorView[]} */
    monitors: [],
    /** @type {string | null} */
    monitor: null,
    /** @type {RunView[]} */
    runs: [],
    /** @type {string | null} */
    run: null,
  };

  function renderMonitors() {
    openableRows(deps, $('monitor-rows'), state.monitors, (m) => ({
      id: m.id,
      cells: [m.name, m.type, m.target_count.toLocaleString('en'), m.status, when(m.last_run_at), when(m.next_run_at), FREQUENCY_WORDS[m.frequency] ?? m.frequency],
      label: `Monitor ${m.name}, ${m.type}`,
      selected: m.id === state.monitor,
      open: () => {
        state.monitor = m.id;
        state.run = null;
        renderMonitors();
        void loadRuns();
      },
    }));
    $('no-monitors').hidden = state.monitors.length > 0;
    const m = state.monitors.find((x) => x.id === state.monitor);
    $('monitor-detail').hidden = !m;
    if (m) $('monitor-name').textContent = m.name;
  }

  function renderRuns() {
    openableRows(deps, $('run-rows'), state.runs, (r) => ({
      id: r.id,
      cells: [r.status, r.trigger, r.stats.total_records ?? '', r.stats.changes_detected ?? '', r.stats.credits_used ?? '', when(r.created_at)],
      label: `Run of ${when(r.created_at)}, ${r.status}`,
      selected: r.id === state.run,
      data: { status: r.status },
      open: () => {
        state.run = r.id;
        renderRuns();
        void loadResults();
      },
    }));
    $('no-runs').hidden = state.runs.length > 0;
  }

  async function loadMonitors() {
    /** @type {{ monitors: MonitorView[] }} */
    const answer = await deps.api('GET', '/api/monitors?limit=50');
    state.monitors = answer.monitors;
    renderMonitors();
  }

  async function loadRuns() {
    if (!state.monitor) return;
    /** @type {{ runs: RunView[] }} */
    const answer = await deps.api('GET', `/api/agent/monitors/${encodeURIComponent(state.monitor)}/runs?limit=20`);
    state.runs = answer.runs;
    renderRuns();
  }

  async function loadResults() {
    if (!state.monitor || !state.run) return;
    const only = /** @type {HTMLInputElement} */ ($('changes-only')).checked;
    /** @type {ResultView[]} */
    const results = await deps.api('GET', `${resultsPath()}${only ? '?changes_only=true' : ''}`);
    const body = $('result-rows');
    body.replaceChildren();
    for (const r of results) {
      const tr = row([r.target, r.has_changes ? 'yes' : 'no', changesInWords(r.changes)]);
      tr.dataset.target = r.target;
      body.append(tr);
    }
    $('run-results').hidden = false;
  }

  const resultsPath = () => `/api/monitors/${encodeURIComponent(state.monitor ?? '')}/runs/${encodeURIComponent(state.run ?? '')}/results`;

  /** @type {ListChoice[]} */
  let lists = [];

  /** The ready lists of the chosen type; typed targets when none is chosen (the textarea is needed only then). */
  function renderListChoices() {
    const select = /** @type {HTMLSelectElement} */ ($('monitor-new-list'));
    const type = /** @type {HTMLSelectElement} */ ($('monitor-new-type')).value;
    const chosen = select.value;
    select.replaceChildren(new Option('The targets typed below (a new list)', ''));
    for (const l of lists.filter((x) => x.type === type && x.status === 'ready')) {
      select.append(new Option(`${l.name} (${l.target_count.toLocaleString('en')} targets)`, l.id, false, l.id === chosen));
    }
    const typed = select.value === '';
    const targets = /** @type {HTMLTextAreaElement} */ ($('monitor-new-targets'));
    targets.required = typed;
    targets.disabled = !typed;
  }

  async function create() {
    const name = /** @type {HTMLInputElement} */ ($('monitor-new-name')).value.trim();
    const type = /** @type {HTMLSelectElement} */ ($('monitor-new-type')).value;
    const frequency = /** @type {HTMLSelectElement} */ ($('monitor-new-frequency')).value;
    let listId = /** @type {HTMLSelectElement} */ ($('monitor-new-list')).value;
    const typed = listId === '';
    let made = '';
    if (typed) {
      const targets = /** @type {HTMLTextAreaElement} */ ($('monitor-new-targets')).value.split(/\r?\n/).map((t) => t.trim()).filter((t) => t !== '');
      /** @type {{ id: string, target_count: number, invalid_count: number }} */
      const list = await deps.api('POST', '/api/lists', { name, type, targets });
      listId = list.id;
      made = list.invalid_count ? ` (${list.invalid_count} invalid ones left out)` : '';
    }
    /** @type {MonitorView} */
    const monitor = await deps.api('POST', '/api/monitors', { name, type, frequency, list_id: listId });
    deps.notify(`Monitor ${monitor.name} watches ${monitor.target_count.toLocaleString('en')} targets${made}, ${FREQUENCY_WORDS[monitor.frequency] ?? monitor.frequency}.`);
    state.monitor = monitor.id;
    await loadMonitors();
    await loadRuns();
    // Typed targets became a list of their own: the lists panel shows it.
    if (typed) await deps.listsChanged();
  }

  async function runNow() {
    /** @type {RunView} */
    const run = await deps.api('POST', `/api/agent/monitors/${encodeURIComponent(state.monitor ?? '')}/run`);
    deps.notify(`Run queued; it starts when a worker is free.`);
    state.run = run.id;
    await loadRuns();
  }

  $('monitor-form').addEventListener('submit', (event) => {
    event.preventDefault();
    create().catch((error) => deps.notify(`Could not create the monitor: ${error.message}`, true));
  });
  $('monitor-run').addEventListener('click', () => runNow().catch((error) => deps.notify(`Could not run the monitor: ${error.message}`, true)));
  $('changes-only').addEventListener('change', () => void loadResults());
  $('monitor-new-type').addEventListener('change', renderListChoices);
  $('monitor-new-list').addEventListener('change', renderListChoices);
  $('results-download').addEventListener('click', () => {
    const only = /** @type {HTMLInputElement} */ ($('changes-only')).checked;
    deps.save(`${resultsPath()}/download${only ? '?changes_only=true' : ''}`).catch((error) => deps.notify(`Download failed: ${error.message}`, true));
  });

  return {
    /** At sign-in. */
    async refresh() {
      await loadMonitors();
      await loadRuns();
    },
    /** On every poll of the page: the open monitor's runs move while they run. */
    poll: loadRuns,
    /**
     * The account's lists changed (loaded, uploaded, deleted): the form offers the ready ones.
     * @param {ListChoice[]} all
     */
    offerLists(all) {
      lists = all;
      renderListChoices();
    },
    reset() {
      Object.assign(state, { monitors: [], monitor: null, runs: [], run: null });
      for (const id of ['monitor-rows', 'run-rows', 'result-rows']) $(id).replaceChildren();
      $('monitor-detail').hidden = true;
      $('run-results').hidden = true;
    },
  };
}
