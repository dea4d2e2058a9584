import { guardedGet, type GuardedGetOptions } from './guarded-get.js';

export interface MtaStsPolicy {
  mode: 'enforce' | 'testing' | 'none' | null;
  mx: string[];
  max_age: number | null;
  /** Why no policy could be read: `fetch_failed`, `http_<status>`, `invalid`, `tls_error`, ...; null when read. */
  error: string | null;
}

/** RFC 8461 3.2/3.3: GET https://mta-sts.<domain>/.well-known/mta-sts.txt, a `key: value` text. */
export async function fetchMtaStsPolicy(domain: string, options: GuardedGetOptions, signal?: AbortSignal): Promise<MtaStsPolicy> {
  const got = await guardedGet(`https://mta-sts.${domain}/.well-known/mta-sts.txt`, options, signal);
  if (!got.ok) return { mode: null, mx: [], max_age: null, error: got.error };
  if (got.status !== 200) return { mode: null, mx: [], max_age: null, error: `http_${got.status}` };
  return parseMtaStsPolicy(got.body);
}

export function parseMtaStsPolicy(text: string): MtaStsPolicy {
  const fields = text.split(/\r?\n/).map((line) => /^\s*([a-z_]+)\s*:\s*(.*?)\s*$/i.exec(line)).filter((m) => m !== null);
  const get = (k: string) => fields.filter((m) => m[1]!.toLowerCase() === k).map((m) => m[2]!);
  const mode = get('mode')[0];
  const maxAge = Number(get('max_age')[0]);
  if (get('version')[0] !== 'STSv1' || (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') || !Number.isInteger(maxAge)) {
    return { mode: null, mx: [], max_age: null, error: 'invalid' };
  }
  return { mode, mx: get('mx'), max_age: maxAge, error: null };
}
