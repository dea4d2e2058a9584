// @ts-check
// What every panel of the dashboard builds its tables with: createElement and textContent only, so
// no value from a customer (a file name, a target, a list name) can become markup.

/**
 * An element of index.html. Every id asked for is in the page: a missing one is a bug of the caller.
 * @param {string} id
 * @returns {HTMLElement}
 */
export const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * A table row of cells: a Node goes in as it is, anything else as text.
 * @param {unknown[]} cells
 */
export function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    if (cell instanceof Node) td.append(cell);
    else td.textContent = cell === null || cell === undefined ? '' : String(cell);
    tr.append(td);
  }
  return tr;
}

/**
 * What a panel lends to render rows that open (dashboard.js's `operable` and `keepingFocus`).
 * @typedef {object} RowDeps
 * @property {(tr: HTMLTableRowElement, label: string, open: () => void) => void} operable
 * @property {(body: HTMLElement, render: () => void) => void} keepingFocus
 */

/**
 * Replaces `body`'s rows with one per item, each taking focus and opening with a click, Enter or
 * Space, the selected one marked; the row that had focus keeps it.
 * @template T
 * @param {RowDeps} deps
 * @param {HTMLElement} body
 * @param {T[]} items
 * @param {(item: T) => { id: string, cells: unknown[], label: string, selected: boolean, open: () => void, data?: Record<string, string> }} view
 */
export function openableRows(deps, body, items, view) {
  deps.keepingFocus(body, () => {
    body.replaceChildren();
    for (const item of items) {
      const v = view(item);
      const tr = row(v.cells);
      tr.dataset.id = v.id;
      Object.assign(tr.dataset, v.data ?? {});
      if (v.selected) tr.className = 'selected';
      deps.operable(tr, v.label, v.open);
      body.append(tr);
    }
  });
}
