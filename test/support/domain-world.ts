import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { DnsFake } from './dns-fake.js';
import { closeServers, listenLoopback, testCertificate, writeRdapBootstrap } from './loopback-web.js';

/**
 * The loopback internet a domain report meets: a DNS fake with every record type the report reads,
 * an RDAP registry with its bootstrap file, a certificate-transparency service speaking the remote
 * lookup protocol, and an HTTPS site with a test CA serving discovery files. Nothing leaves 127.0.0.0/8.
 *
 * Domains: site.test (everything; registered 2020-01-01, so CT names seen before are `previous`),
 * plain.test (an A record only, no registry answer). `ct` and `files` are the test's to change between runs.
 */
export interface DomainWorld {
  dns: DnsFake;
  /** `127.0.0.1:port` of the DNS fake (SLUICE_DNS_SERVERS). */
  dnsServer: string;
  caPem: string;
  caFile: string;
  httpsPort: number;
  rdapBootstrap: string;
  ctUrl: string;
  rdap: Record<string, unknown>;
  ct: Record<string, { name: string; first_seen: string }[]>;
  files: Record<string, string>;
  requests: { rdap: string[]; ct: string[]; https: string[] };
  stop(): Promise<void>;
}

export function rdapDoc(registrar: string, expires: string): Record<string, unknown> {
  return {
    objectClassName: 'domain',
    events: [
      { eventAction: 'registration', eventDate: '2020-01-01T00:00:00Z' },
      { eventAction: 'expiration', eventDate: expires },
    ],
    entities: [{ roles: ['registrar'], vcardArray: ['vcard', [['version', {}, 'text', '4.0'], ['fn', {}, 'text', registrar]]] }],
    nameservers: [{ ldhName: 'NS1.SITE.TEST' }, { ldhName: 'ns2.site.test' }],
    secureDNS: { delegationSigned: true },
  };
}

export async function startDomainWorld(): Promise<DomainWorld> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-domain-'));
  const requests: DomainWorld['requests'] = { rdap: [], ct: [], https: [] };
  const pems = await testCertificate(dir, ['site.test', 'plain.test', 'mta-sts.site.test']);
  const world = {
    rdap: { 'site.test': rdapDoc('Example Registrar, Inc.', '2030-01-01T00:00:00Z') } as Record<string, unknown>,
    ct: {
      'site.test': [
        { name: 'www.site.test', first_seen: '2021-05-01T00:00:00Z' },
        { name: '*.api.site.test', first_seen: '2022-02-01T00:00:00Z' },
        { name: 'old.site.test', first_seen: '2018-03-01T00:00:00Z' },
        { name: 'elsewhere.example', first_seen: '2021-01-01T00:00:00Z' },
      ],
    } as DomainWorld['ct'],
    files: {
      'site.test/robots.txt': 'User-agent: *\nDisallow: /private\nSitemap: https://site.test/sitemap.xml\n',
      'site.test/.well-known/security.txt': 'Contact: mailto:security@site.test\nExpires: 2030-01-01T00:00:00.000Z\n',
      'mta-sts.site.test/.well-known/mta-sts.txt': 'version: STSv1\nmode: enforce\nmx: mx.site.test\nmax_age: 86400\n',
      'site.test/llms.txt': '# Site\n> A test site.\n',
    } as Record<string, string>,
  };
  const site = https.createServer({ cert: pems.cert, key: pems.key }, (req, res) => {
    requests.https.push(`${req.headers.host}${req.url}`);
    const body = world.files[`${req.headers.host}${req.url}`];
    if (body !== undefined) res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
    else res.writeHead(404).end('not found');
  });
  const rdap = http.createServer((req, res) => {
    requests.rdap.push(req.url ?? '');
    const doc = world.rdap[(req.url ?? '').replace('/rdap/domain/', '')];
    if (doc) res.writeHead(200, { 'content-type': 'application/rdap+json' }).end(JSON.stringify(doc));
    else res.writeHead(404, { 'content-type': 'application/rdap+json' }).end('{"errorCode":404}');
  });
  // The remote lookup protocol (src/lookups/remote/remote-provider.ts): POST /v1/lookups/ct_subdomains {keys}.
  const ct = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      requests.ct.push(`${req.url} ${req.headers.authorization ?? ''}`);
      if (req.url !== '/v1/lookups/ct_subdomains') return res.writeHead(404).end();
      const { keys } = JSON.parse(body) as { keys: string[] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: keys.map((k) => ({ ok: true, result: { names: world.ct[k] ?? [] } })) }));
    });
  });
  const [httpsPort, rdapPort, ctPort] = [await listenLoopback(site), await listenLoopback(rdap), await listenLoopback(ct)];
  const rdapBootstrap = writeRdapBootstrap(dir, ['test'], rdapPort);

  const dns = new DnsFake();
  const server = await dns.start();
  dns
    .set('site.test', {
      a: ['127.0.0.1'],
      aaaa: ['::1'],
      mx: [{ preference: 10, exchange: 'mx.site.test' }],
      ns: ['ns1.site.test', 'ns2.site.test'],
      txt: ['v=spf1 mx -all', 'google-site-verification=xyz'],
      caa: [{ tag: 'issue', value: 'letsencrypt.org' }, { tag: 'iodef', value: 'mailto:ca@site.test' }],
      soa: { mname: 'ns1.site.test', rname: 'hostmaster.site.test', serial: 2026010101 },
    })
    .set('mx.site.test', { a: ['127.0.0.55'] })
    .set('_dmarc.site.test', { txt: ['v=DMARC1; p=quarantine; rua=mailto:d@site.test'] })
    .set('_mta-sts.site.test', { txt: ['v=STSv1; id=1'] })
    .set('mta-sts.site.test', { a: ['127.0.0.1'] })
    .set('_smtp._tls.site.test', { txt: ['v=TLSRPTv1; rua=mailto:tls@site.test'] })
    .set('default._bimi.site.test', { txt: ['v=BIMI1; l=https://site.test/logo.svg'] })
    .set('plain.test', { a: ['127.0.0.1'] });

  return {
    dns,
    caPem: pems.cert,
    caFile: pems.caFile,
    httpsPort,
    rdapBootstrap,
    ctUrl: `http://127.0.0.1:${ctPort}`,
    ...world,
    requests,
    async stop() {
      await closeServers([site, rdap, ct]);
      await dns.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    dnsServer: server,
  };
}

/** Every network part of the report on loopback: the DNS fake, RDAP, CT and HTTPS with the test CA. */
export function domainWorldEnv(w: DomainWorld): Record<string, string> {
  return {
    SLUICE_DNS_SERVERS: w.dnsServer,
    SLUICE_ENRICH_ALLOW_PRIVATE: 'true',
    SLUICE_ENRICH_CA_FILE: w.caFile,
    SLUICE_ENRICH_HTTPS_PORT: String(w.httpsPort),
    SLUICE_RDAP_BOOTSTRAP: w.rdapBootstrap,
    SLUICE_CT_URL: w.ctUrl,
    SLUICE_RATE_LIMIT_PER_MINUTE: '100000',
  };
}
