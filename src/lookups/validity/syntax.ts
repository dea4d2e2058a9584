import { domainToASCII } from 'node:url';

const ATEXT = "[a-z0-9!#$%&'*+/=?^_`{|}~-]+";
const DOT_ATOM = new RegExp(`^${ATEXT}(?:\\.${ATEXT})*$`, 'i');
/** RFC 5321 quoted-string: printable ASCII, with `\` escaping any printable character. */
const QUOTED = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

export type SyntaxResult =
  | { ok: true; address: string; local: string; domain: string; canonical: string | null }
  | { ok: false; problem: string };

/**
 * RFC 5321/5322 as mail servers accept it: a dot-atom or quoted local part of at most 64 octets, a
 * domain of LDH labels (Unicode names turned to punycode, as RFC 5891 asks before DNS sees them)
 * of at most 253, and 254 in all. Dot-atom local parts are lower-cased, as every mailbox provider
 * treats them, so that one mailbox is one billing key; a quoted local part is kept as written.
 */
export function checkSyntax(input: string): SyntaxResult {
  const text = input.trim();
  const at = text.lastIndexOf('@');
  if (at < 1) return { ok: false, problem: 'no local part and domain' };
  const rawLocal = text.slice(0, at);
  const rawDomain = text.slice(at + 1);
  let local: string;
  if (rawLocal.startsWith('"')) {
    if (!QUOTED.test(rawLocal)) return { ok: false, problem: 'malformed quoted local part' };
    local = rawLocal;
  } else {
    if (!DOT_ATOM.test(rawLocal)) return { ok: false, problem: 'local part is not a dot-atom' };
    local = rawLocal.toLowerCase();
  }
  if (Buffer.byteLength(local) > 64) return { ok: false, problem: 'local part longer than 64 octets' };
  const domain = domainToASCII(rawDomain.replace(/\.$/, '')).toLowerCase();
  if (domain === '') return { ok: false, problem: 'domain is not a valid name' };
  if (domain.length > 253) return { ok: false, problem: 'domain longer than 253 octets' };
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || !TLD.test(labels[labels.length - 1]!)) {
    return { ok: false, problem: 'domain is not a valid name' };
  }
  const address = `${local}@${domain}`;
  if (address.length > 254) return { ok: false, problem: 'address longer than 254 octets' };
  return { ok: true, address, local, domain, canonical: canonicalOf(local, domain) };
}

/**
 * Gmail documents that dots in the local part are ignored and that `+anything` reaches the same
 * mailbox (support.google.com/mail/answer/7436150, /answer/22370); googlemail.com is the same
 * service. No other provider documents both, so no other gets a canonical form.
 */
function canonicalOf(local: string, domain: string): string | null {
  if (domain !== 'gmail.com' && domain !== 'googlemail.com') return null;
  if (local.startsWith('"')) return null;
  const base = local.split('+')[0]!.replaceAll('.', '');
  return base === '' ? null : `${base}@gmail.com`;
}
