import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';

export interface GuardedGetOptions {
  resolver: DnsResolver;
  /** The webhook address policy: a reason when the address must not be reached. */
  blockedReason: (ip: string) => string | undefined;
  /** Tests only (loopback fakes): skip the address policy. */
  allowPrivate: boolean;
  /** Extra trust anchors (PEM) beside Node's roots; a test CA in tests. */
  ca?: string | undefined;
  timeoutMs: number;
  maxBytes: number;
  /** Port override for https URLs (tests: a loopback server's port 0 port). */
  httpsPort?: number | undefined;
}

export type GuardedGet = { ok: true; status: number; body: string } | { ok: false; error: string };

/**
 * A GET to a host named by someone else's DNS (MTA-STS, RDAP): resolved through the shared DNS
 * layer, every address checked by the webhook address policy, then connected to that very address
 * with TLS verified for the host name, so that DNS cannot steer the request inside our network.
 */
export async function guardedGet(raw: string, options: GuardedGetOptions, signal?: AbortSignal): Promise<GuardedGet> {
  const url = new URL(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let ip = host;
  if (isIP(host) === 0) {
    const answer = await options.resolver.query(host, 'A', signal);
    const first = answer.records.find((r) => r.type === 'A');
    if (answer.rcode !== DNS_RCODES.noError || first === undefined || first.type !== 'A') return { ok: false, error: 'dns_error' };
    ip = first.value;
  }
  if (!options.allowPrivate && options.blockedReason(ip) !== undefined) return { ok: false, error: 'blocked_address' };
  const secure = url.protocol === 'https:';
  const port = url.port !== '' ? Number(url.port) : secure ? (options.httpsPort ?? 443) : 80;
  return new Promise((resolve) => {
    const request = (secure ? https : http).request(
      {
        host: ip,
        port,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { host: url.host, accept: 'application/json, text/plain' },
        ...(secure ? { servername: isIP(host) === 0 ? host : undefined, ca: options.ca ? [options.ca, ...tls.rootCertificates] : undefined } : {}),
        timeout: options.timeoutMs,
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            request.destroy();
            resolve({ ok: false, error: 'too_large' });
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () => resolve({ ok: true, status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', () => resolve({ ok: false, error: 'connection_failed' }));
      },
    );
    request.on('timeout', () => {
      request.destroy();
      resolve({ ok: false, error: 'timeout' });
    });
    request.on('error', (e: NodeJS.ErrnoException) => resolve({ ok: false, error: e.code?.startsWith('ERR_TLS') || /certificate|self.signed/i.test(e.message) ? 'tls_error' : 'connection_failed' }));
    request.end();
  });
}
