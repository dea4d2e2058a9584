// @ts-check
// The header row of a CSV the user picked, read in the browser (the file is not sent for this):
// the column names a form offers as its key or target column. Used by the job and the list forms.

/**
 * The header's column names, with the delimiter that splits it into the most fields (comma,
 * semicolon, tab or pipe, as the API detects them); [] for no file.
 * @param {File | undefined} file
 * @returns {Promise<string[]>}
 */
export async function headerColumns(file) {
  if (!file) return [];
  const head = (await file.slice(0, 65_536).text()).replace(/^\uFEFF/, '').split(/\r?\n/)[0] ?? '';
  const delimiter = [',', ';', '\t', '|'].reduce((best, d) => (head.split(d).length > head.split(best).length ? d : best), ',');
  return head
    .split(delimiter)
    .map((c) => c.trim().replace(/^"(.*)"$/, '$1'))
    .filter((c) => c !== '');
}

/**
 * Fills a column choice with "Detect automatically" and the file's header names.
 * @param {HTMLSelectElement} select
 * @param {File | undefined} file
 */
export async function offerColumns(select, file) {
  select.replaceChildren(new Option('Detect automatically', ''));
  for (const name of await headerColumns(file)) select.append(new Option(name, name));
}
