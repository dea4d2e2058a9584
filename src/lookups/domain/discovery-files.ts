import { guardedGet, type GuardedGetOptions } from '../enrich/guarded-get.js';

/**
 * The agent-readiness discovery files a site may publish at well-known places: crawler rules
 * (RFC 9309), the security contact (RFC 9116, at its .well-known place and the legacy root), the
 * llms.txt proposal (https://llmstxt.org), and the agent and plugin manifests agents look for.
 */
export const DISCOVERY_PATHS = [
  '/robots.txt',
  '/.well-known/security.txt',
  '/llms.txt',
  '/llms-full.txt',
  '/.well-known/ai-plugin.json',
  '/.well-known/agent.json',
  '/.well-known/mcp.json',
] as const;

export interface DiscoveryFile {
  path: string;
  /** `found`: HTTP 200; `missing`: any other HTTP status; `error`: no HTTP answer (see `error`). */
  status: 'found' | 'missing' | 'error';
  http_status: number | null;
  bytes: number | null;
  /** A few fields read from the file, where its format has them (security.txt: contact, expires). */
  fields: Record<string, string[]> | null;
  error: string | null;
}

/** Each file is fetched over HTTPS under the webhook address policy (guardedGet); none is followed. */
export async function fetchDiscoveryFiles(domain: string, fetch: GuardedGetOptions, signal?: AbortSignal): Promise<DiscoveryFile[]> {
  return Promise.all(
    DISCOVERY_PATHS.map(async (path): Promise<DiscoveryFile> => {
      const got = await guardedGet(`https://${domain}${path}`, fetch, signal);
      if (!got.ok) return { path, status: 'error', http_status: null, bytes: null, fields: null, error: got.error };
      if (got.status !== 200) return { path, status: 'missing', http_status: got.status, bytes: null, fields: null, error: null };
      return { path, status: 'found', http_status: 200, bytes: Buffer.byteLength(got.body), fields: fieldsOf(path, got.body), error: null };
    }),
  );
}

function fieldsOf(path: string, body: string): Record<string, string[]> | null {
  if (path === '/.well-known/security.txt') return lineFields(body, ['contact', 'expires', 'policy', 'encryption']);
  if (path === '/robots.txt') return lineFields(body, ['user-agent', 'sitemap']);
  return null;
}

/** `Field: value` lines (security.txt, robots.txt); comments skipped; keys lower-cased. */
function lineFields(body: string, wanted: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of body.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z-]+)\s*:\s*(.+?)\s*$/.exec(line.replace(/#.*$/, ''));
    if (!m) continue;
    const key = m[1]!.toLowerCase();
    if (!wanted.includes(key)) continue;
    (out[key] ??= []).push(m[2]!);
  }
  return out;
}
