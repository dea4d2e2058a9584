// Finds the identifier group of gitleaks' "semi-generic" patterns: `[\w.-]{0,50}?(?:ids)rest`, one
// branch at the top level. Such a pattern can only match where `ids` matches 0 to 50 characters
// after the start, so the scanner looks for `ids` first (a cheap search) and tries the whole
// pattern only at the 51 starts before each place it is found, instead of at every position of the
// text with 50 lazy steps each: the same matches, found about 20 times faster on 256 KB.
const PREFIX = '[\\w.\\-]{0,50}?';

/** @returns {{ source: string, lead: number } | undefined} */
export function semiGenericAnchor(source) {
  if (!source.startsWith(`${PREFIX}(?:`)) return undefined;
  let start = PREFIX.length;
  let lead = 50;
  // `[\w.-]{0,50}?(?:[\w.-]{0,50}?(?:ids)...)`: the two lazy runs together reach 100 characters.
  while (source.startsWith(`(?:${PREFIX}`, start)) {
    start += 3 + PREFIX.length;
    lead += 50;
  }
  const end = groupEnd(source, start);
  if (end === -1) return undefined;
  const ids = source.slice(start, end + 1);
  // A nested prefix inside the identifiers would make the anchor as slow as the pattern.
  if (ids.includes(PREFIX)) return undefined;
  if (hasTopLevelBar(source)) return undefined;
  return { source: ids, lead };
}

function groupEnd(s, open) {
  let depth = 0;
  let inClass = false;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function hasTopLevelBar(s) {
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) return true;
  }
  return false;
}
