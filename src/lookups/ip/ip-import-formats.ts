import { bigIntToKey, prefixBounds, prefixOf } from '../../shared/ip-keys.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { AsNameRow, AsOrgRow, AsRelationshipRow, IpPrefixRow, IpRangeRow, RirAsnRow } from '../../storage/ip-network-records.js';

/** What one line of an import file is: rows for the store, a date for the data, nothing, or an error. */
export type ParsedLine =
  | { kind: 'range'; row: IpRangeRow }
  | { kind: 'rirAsn'; row: RirAsnRow }
  | { kind: 'prefix'; row: IpPrefixRow }
  | { kind: 'asName'; row: AsNameRow }
  | { kind: 'asOrg'; row: AsOrgRow }
  | { kind: 'asRel'; row: AsRelationshipRow }
  /** A header that says which day the file describes. */
  | { kind: 'date'; date: string }
  /** A comment, a summary, or a record the lookups have no use for (available, reserved space). */
  | { kind: 'skip' }
  | { kind: 'invalid'; code: string };

const MAX_ASN = 4_294_967_295;
const INVALID = (code: string): ParsedLine => ({ kind: 'invalid', code });
const SKIP: ParsedLine = { kind: 'skip' };

/** `YYYYMMDD` as `YYYY-MM-DD`; undefined for anything else (RIRs write `00000000` or nothing when unknown). */
export function compactDate(text: string): string | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})$/.exec(text);
  if (!m || text === '00000000') return undefined;
  const iso = `${m[1]}-${m[2]}-${m[3]}`;
  return isIsoDate(iso) ? iso : undefined;
}

export function isIsoDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text;
}

function asn(text: string): number | undefined {
  const t = text.trim().replace(/^AS/i, '');
  if (!/^\d{1,10}$/.test(t)) return undefined;
  const n = Number(t);
  return n <= MAX_ASN ? n : undefined;
}

/** Registries' kinds of records that say who holds the space; available and reserved space has no holder. */
const HELD = new Set(['allocated', 'assigned']);

/**
 * One line of the NRO delegated-extended statistics (`registry|cc|type|start|value|date|status|
 * opaque-id|extensions`), or of a single RIR's delegated or delegated-extended file. The version
 * line names the file's date (its serial, else its end date); summary lines are skipped. IPv4
 * records count addresses (a range need not be CIDR-aligned); IPv6 records give a prefix length.
 */
export function parseRirLine(line: string): ParsedLine {
  if (line === '' || line.startsWith('#')) return SKIP;
  const f = line.split('|');
  if (/^\d+(\.\d+)?$/.test(f[0]!)) {
    const date = compactDate(f[2] ?? '') ?? compactDate(f[5] ?? '');
    return date === undefined ? SKIP : { kind: 'date', date };
  }
  if (f[5] === 'summary') return SKIP;
  if (f.length < 7) return INVALID(ERROR_CODES.malformedLine);
  const [registry, ccRaw, type, start, value, dateRaw, statusRaw, opaque] = f.map((x) => x.trim()) as string[];
  const status = statusRaw!.toLowerCase();
  if (!HELD.has(status)) return SKIP;
  const cc = /^[A-Za-z]{2}$/.test(ccRaw!) && ccRaw!.toUpperCase() !== 'ZZ' ? ccRaw!.toUpperCase() : null;
  const allocatedAt = dateRaw === '' ? null : (compactDate(dateRaw!) ?? null);
  if (dateRaw !== '' && dateRaw !== '00000000' && allocatedAt === null) return INVALID(ERROR_CODES.invalidDate);
  const opaqueId = opaque === undefined || opaque === '' ? null : opaque;
  if (type === 'asn') {
    const first = asn(start!);
    const count = Number(value);
    if (first === undefined || !Number.isInteger(count) || count < 1) return INVALID(ERROR_CODES.invalidAsn);
    if (opaqueId === null) return SKIP;
    return { kind: 'rirAsn', row: { firstAsn: first, count, registry: registry!, opaqueId } };
  }
  if (type === 'ipv4') {
    const p = prefixOf(start!, '32');
    const count = Number(value);
    if (!p || p.family !== 4 || !Number.isInteger(count) || count < 1) return INVALID(ERROR_CODES.invalidPrefix);
    const first = prefixBounds(4, p.key, 32).first;
    const last = first + BigInt(count) - 1n;
    if (last > 0xffffffffn) return INVALID(ERROR_CODES.invalidPrefix);
    return { kind: 'range', row: { family: 4, startKey: p.key, endKey: bigIntToKey(last, 4), registry: registry!, cc, allocatedAt, status, opaqueId } };
  }
  if (type === 'ipv6') {
    const p = prefixOf(start!, value!);
    if (!p || p.family !== 6) return INVALID(ERROR_CODES.invalidPrefix);
    const { last } = prefixBounds(6, p.key, p.length);
    return { kind: 'range', row: { family: 6, startKey: p.key, endKey: bigIntToKey(last, 6), registry: registry!, cc, allocatedAt, status, opaqueId } };
  }
  return INVALID(ERROR_CODES.malformedLine);
}

/** Origins as RouteViews writes them: ASNs joined by `_` (several origins), a group joined by `,` (an AS set). */
const ORIGINS = /^\d{1,10}(?:[_,]\d{1,10})*$/;

/** One line of a RouteViews prefix-to-AS file: `prefix<TAB>length<TAB>origins`. */
export function parsePfx2asLine(line: string): ParsedLine {
  if (line === '' || line.startsWith('#')) return SKIP;
  const f = line.split(/\s+/);
  if (f.length !== 3) return INVALID(ERROR_CODES.malformedLine);
  const p = prefixOf(f[0]!, f[1]!);
  if (!p) return INVALID(ERROR_CODES.invalidPrefix);
  const origins = f[2]!;
  if (!ORIGINS.test(origins) || origins.split(/[_,]/).some((a) => asn(a) === undefined)) return INVALID(ERROR_CODES.invalidAsn);
  return { kind: 'prefix', row: { family: p.family, startKey: p.key, length: p.length, origins } };
}

/**
 * One line of an AS names file, in either form: CAIDA's as2org (`org_id|changed|org_name|country|
 * source` and `aut|changed|aut_name|org_id|opaque_id|source`, told apart by their field counts), or
 * the simple `asn,name,country` (a name may hold commas; the country is the last field when it is
 * two letters; an optional header line `asn,name,country` is skipped).
 */
export function parseAsNamesLine(line: string): ParsedLine {
  if (line === '' || line.startsWith('#')) return SKIP;
  if (line.includes('|')) {
    const f = line.split('|');
    if (f.length === 6) {
      const n = asn(f[0]!);
      if (n === undefined) return INVALID(ERROR_CODES.invalidAsn);
      return { kind: 'asName', row: { asn: n, name: f[2]!.trim(), orgId: f[3]!.trim() || null, country: null } };
    }
    if (f.length === 5) {
      if (f[0]!.trim() === '') return INVALID(ERROR_CODES.malformedLine);
      return { kind: 'asOrg', row: { orgId: f[0]!.trim(), name: f[2]!.trim(), country: country(f[3]!) } };
    }
    return INVALID(ERROR_CODES.malformedLine);
  }
  const f = csvFields(line);
  if (f.length < 2) return INVALID(ERROR_CODES.malformedLine);
  if (f[0]!.toLowerCase() === 'asn') return SKIP;
  const n = asn(f[0]!);
  if (n === undefined) return INVALID(ERROR_CODES.invalidAsn);
  const last = f.length >= 3 ? country(f[f.length - 1]!) : null;
  // Unquoted, a name's own commas keep the blanks around them, as the file wrote it.
  const raw = line.includes('"') ? undefined : line.slice(line.indexOf(',') + 1, last === null ? undefined : line.lastIndexOf(','));
  const name = (raw ?? (last === null ? f.slice(1) : f.slice(1, -1)).join(',')).trim();
  if (name === '') return INVALID(ERROR_CODES.malformedLine);
  return { kind: 'asName', row: { asn: n, name, orgId: null, country: last } };
}

/** A CSV line's fields: a quoted field may hold commas and doubled quotes. */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let value = '';
      i++;
      while (i < line.length) {
        if (line[i] === '"' && line[i + 1] === '"') {
          value += '"';
          i += 2;
        } else if (line[i] === '"') {
          i++;
          break;
        } else value += line[i++];
      }
      const comma = line.indexOf(',', i);
      out.push(value);
      i = comma < 0 ? line.length + 1 : comma + 1;
    } else {
      const comma = line.indexOf(',', i);
      out.push(line.slice(i, comma < 0 ? line.length : comma).trim());
      i = comma < 0 ? line.length + 1 : comma + 1;
    }
  }
  return out;
}

function country(text: string): string | null {
  const t = text.trim();
  return /^[A-Za-z]{2}$/.test(t) && t.toUpperCase() !== 'ZZ' ? t.toUpperCase() : null;
}

/** One line of CAIDA's as-rel (`a|b|-1`: a is b's provider; `a|b|0`: peers; a fourth source field is allowed). */
export function parseAsRelLine(line: string): ParsedLine {
  if (line === '' || line.startsWith('#')) return SKIP;
  const f = line.split('|');
  if (f.length < 3 || f.length > 4) return INVALID(ERROR_CODES.malformedLine);
  const a = asn(f[0]!);
  const b = asn(f[1]!);
  if (a === undefined || b === undefined || a === b) return INVALID(ERROR_CODES.invalidAsn);
  const rel = f[2]!.trim();
  if (rel !== '-1' && rel !== '0') return INVALID(ERROR_CODES.malformedLine);
  return { kind: 'asRel', row: { a, b, rel: rel === '-1' ? -1 : 0 } };
}
