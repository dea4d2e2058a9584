import { domainToASCII } from 'node:url';
import { ERROR_CODES } from '../../shared/errors.js';

export type DomainName = { ok: true; domain: string } | { ok: false; code: typeof ERROR_CODES.invalidDomain; message: string };

/**
 * A domain as a caller may type it (`Example.COM.`, `https://example.com/path`, `bücher.de`) to
 * its ASCII, lower-case, dot-less form; anything else is refused with one stable code, never looked up.
 */
export function normaliseDomain(input: string): DomainName {
  let text = input.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      text = new URL(text).hostname;
    } catch {
      return invalid();
    }
  }
  const ascii = domainToASCII(text.replace(/\.$/, '')).toLowerCase();
  if (ascii === '' || ascii.length > 253) return invalid();
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => /^[a-z0-9_](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l)) || /^\d+$/.test(labels[labels.length - 1]!)) return invalid();
  return { ok: true, domain: ascii };
}

const invalid = (): DomainName => ({ ok: false, code: ERROR_CODES.invalidDomain, message: 'Give one domain name, such as example.com' });
