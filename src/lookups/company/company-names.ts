/**
 * How company names and domains are read, shared by the company pipeline (keys), the directory
 * import (stored columns) and the directory lookup (queries), so that all three agree.
 */

/** Longest name or domain a key or a directory line may hold, in characters. */
export const MAX_COMPANY_CHARS = 200;

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** Trimmed, every run of blanks (tabs and line breaks included) one space, NFC. */
export function collapseBlanks(text: string): string {
  return text.normalize('NFC').replace(/\s+/gu, ' ').trim();
}

export function charCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * The lowercase host of a value that looks like a domain (a dot and no blanks), with any scheme,
 * user (`info@`), `www.`, port, path, query and trailing dot dropped: `https://www.Acme.com/about`
 * and `info@acme.com` both give `acme.com`. Undefined for anything else, including hosts that are
 * not LDH names with an alphabetic top-level label, so `Inc.` or `acme_corp.com` read as names.
 */
export function domainOf(text: string): string | undefined {
  if (/\s/u.test(text) || !text.includes('.')) return undefined;
  let host = text.replace(SCHEME, '').split(/[/?#]/, 1)[0]!;
  host = host.slice(host.lastIndexOf('@') + 1).replace(/:\d*$/, '').replace(/\.$/, '').toLowerCase();
  if (host.startsWith('www.') && host.indexOf('.', 4) > 0) host = host.slice(4);
  if (host.length > 253) return undefined;
  const labels = host.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label)) || !TLD.test(labels[labels.length - 1]!)) return undefined;
  return host;
}

/** The host and its parents down to two labels, longest first: `eu.shop.acme.com` → ..., `acme.com`. */
export function domainAndParents(host: string): string[] {
  const labels = host.split('.');
  const out: string[] = [];
  for (let i = 0; labels.length - i >= 2; i++) out.push(labels.slice(i).join('.'));
  return out;
}

/** The exact-name key: blanks collapsed, lower case. `ACME  Inc` and `acme inc` are one key. */
export function nameKey(name: string): string {
  return collapseBlanks(name).toLowerCase();
}

/**
 * Legal forms that say nothing about which company is meant, dropped from the end of a name so
 * that `Acme Inc`, `ACME, Inc.` and `Acme Ltd` all meet `Acme`. Only at the end, and never the
 * last word left: `Co` alone stays a name. `Group` and `Holdings` are not here: they usually name
 * a different entity than the bare name.
 */
const LEGAL_FORMS = new Set([
  'inc', 'incorporated', 'corp', 'corporation', 'co', 'company', 'ltd', 'limited', 'llc', 'llp', 'lp', 'plc',
  'gmbh', 'mbh', 'ag', 'kg', 'ug', 'se', 'sa', 'sas', 'sarl', 'srl', 'spa', 'bv', 'nv', 'ab', 'as', 'asa', 'oy',
  'oyj', 'aps', 'pty', 'pte', 'kk', 'sl', 'sro',
]);
const FILLER = new Set(['the', 'and']);

/**
 * A name reduced to the words that identify it, for near matches and the full-text indexes:
 * accents folded, lower case, apostrophes and dots dropped inside words (`J.P.` → `jp`), other
 * punctuation (`&`, `,`, `-`) a word break, `the` and `and` dropped, trailing legal forms dropped.
 * `The Procter & Gamble Co.` → `procter gamble`. Only letters, digits and single spaces remain,
 * so the result is safe to quote into an FTS5 query.
 */
export function coreName(name: string): string {
  const folded = name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/['’.]/g, '');
  const words = folded.split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '');
  const kept = words.filter((w) => !FILLER.has(w));
  const core = kept.length > 0 ? kept : words;
  while (core.length > 1 && LEGAL_FORMS.has(core[core.length - 1]!)) core.pop();
  return core.join(' ');
}

/** Distinct 3-character substrings, as SQLite's trigram tokenizer cuts them (a shorter text is its own). */
export function trigrams(text: string): Set<string> {
  const chars = [...text];
  if (chars.length < 3) return new Set(text === '' ? [] : [text]);
  const out = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  return out;
}

/** Dice coefficient of two trigram sets: 1 for the same text, 0 for nothing in common. */
export function similarity(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let common = 0;
  for (const t of a) if (b.has(t)) common++;
  return (2 * common) / (a.size + b.size);
}
