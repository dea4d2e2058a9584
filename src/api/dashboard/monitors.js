// @ts-check
// The dashboard's monitors (issue 33): make a list and a monitor from pasted targets, run it now,
// see its runs, each run's results with their changes, and download them. Built with createElement
// and textContent only, as dashboard.js: targets and values come from customers.

/**
 * @typedef {object} MonitorView
 * @property {string} id
 * @property {string} name
 * @property {string} type
 * @property {string} status
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
 */

/**
 * @param {string} id
 * @returns {HTMLElement}
 */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** @param {string | null | undefined} iso */
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');
/** @param {unknown} v */
const shown = (v) => (Array.isArray(v) ? (v.length === 0 ? '—' : v.join('; ')) : v === null || v === undefined ? '—' : String(v));

/** @param {unknown[]} cells */
function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    td.textContent = cell === null || cell === undefined ? '' : String(cell);
    tr.append(td);
  }
  return tr;
}

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
    const body = $('monitor-rows');
    deps.keepingFocus(body, () => {
      body.replaceChildren();
      for (const m of state.monitors) {
        const tr = row([m.name, m.type, m.target_count.toLocaleString('en'), m.status, when(m.last_run_at), when(m.next_run_at)]);
        tr.dataset.id = m.id;
        if (m.id === state.monitor) tr.className = 'selected';
        deps.operable(tr, `Monitor ${m.name}, ${m.type}`, () => {
          state.monitor = m.id;
          state.run = null;
          renderMonitors();
          void loadRuns();
        });
        body.append(tr);
      }
    });
    $('no-monitors').hidden = state.monitors.length > 0;
    const m = state.monitors.find((x) => x.id === state.monitor);
    $('monitor-detail').hidden = !m;
    if (m) $('monitor-name').textContent = m.name;
  }

  function renderRuns() {
    const body = $('run-rows');
    deps.keepingFocus(body, () => {
      body.replaceChildren();
      for (const r of state.runs) {
        const tr = row([r.status, r.trigger, r.stats.total_records ?? '', r.stats.changes_detected ?? '', r.stats.credits_used ?? '', when(r.created_at)]);
        tr.dataset.id = r.id;
        tr.dataset.status = r.status;
        if (r.id === state.run) tr.className = 'selected';
        deps.operable(tr, `Run of ${when(r.created_at)}, ${r.status}`, () => {
          state.run = r.id;
          renderRuns();
          void loadResults();
        });
        body.append(tr);
      }
    });
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

  async function create() {
    const name = /** @type {HTMLInputElement} */ ($('monitor-new-name')).value.trim();
    const type = /** @type {HTMLSelectElement} */ ($('monitor-new-type')).value;
    const targets = /** @type {HTMLTextAreaElement} */ ($('monitor-new-targets')).value.split(/\r?\n/).map((t) => t.trim()).filter((t) => t !== '');
    /** @type {{ id: string, target_count: number, invalid_count: number }} */
    const list = await deps.api('POST', '/api/lists', { name, type, targets });
    /** @type {MonitorView} */
    const monitor = await deps.api('POST', '/api/monitors', { name, type, frequency: 'weekly', list_id: list.id });
    deps.notify(`Monitor ${monitor.name} watches ${list.target_count.toLocaleString('en')} targets${list.invalid_count ? ` (${list.invalid_count} invalid ones left out)` : ''}.`);
    state.monitor = monitor.id;
    await loadMonitors();
    await loadRuns();
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
    reset() {
      Object.assign(state, { monitors: [], monitor: null, runs: [], run: null });
      for (const id of ['monitor-rows', 'run-rows', 'result-rows']) $(id).replaceChildren();
      $('monitor-detail').hidden = true;
      $('run-results').hidden = true;
    },
  };
}
