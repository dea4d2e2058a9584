import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { gravatarHash } from '../../src/lookups/enrich/gravatar.js';
import { DnsFake } from './dns-fake.js';
import { closeServers, listenLoopback, testCertificate, writeRdapBootstrap } from './loopback-web.js';
import { freeLoopbackPort, SmtpFake } from './smtp-fake.js';

/**
 * The loopback internet the enrich report and compliance verdicts meet: one DNS fake with every
 * mail-authentication record and a validating resolver's AD flag, an MTA-STS policy server over
 * HTTPS with a test CA, an RDAP registry with its bootstrap file, a Gravatar API, and SMTP servers
 * (one with STARTTLS) for the verifier. Nothing leaves 127.0.0.0/8.
 *
 * Domains: trust.test (everything, grade A; user ann; its MX 127.0.0.31 is on the bl.test DNSBL),
 * bare.test (an MX and nothing else; user bo), shop.de (a ccTLD in the EU; users kim, info),
 * acme.co.uk (the same mail host as shop.de), grey.us (greylists each address's first RCPT; user gil).
 */
export interface EnrichWorld {
  dns: DnsFake;
  env: Record<string, string>;
  smtp: SmtpFake[];
  /** Request paths each HTTP fake received, for tests that prove who was asked. */
  requests: { mtaSts: string[]; rdap: string[]; gravatar: string[] };
  stop(): Promise<void>;
}

export const TRUST_POLICY = 'version: STSv1\nmode: enforce\nmx: mx.trust.test\nmax_age: 86400\n';

export const RDAP_TRUST = {
  objectClassName: 'domain',
  ldhName: 'TRUST.TEST',
  events: [
    { eventAction: 'registration', eventDate: '2015-03-01T00:00:00Z' },
    { eventAction: 'expiration', eventDate: '2030-03-01T00:00:00Z' },
  ],
  entities: [
    { roles: ['registrar'], vcardArray: ['vcard', [['version', {}, 'text', '4.0'], ['fn', {}, 'text', 'Example Registrar, Inc.']]] },
    { roles: ['registrant'], vcardArray: ['vcard', [['version', {}, 'text', '4.0'], ['adr', { cc: 'US' }, 'text', ['', '', '1 Main St', 'Springfield', 'IL', '62701', 'United States']]]] },
  ],
  nameservers: [{ ldhName: 'NS1.TRUST.TEST' }, { ldhName: 'ns2.trust.test' }],
  secureDNS: { delegationSigned: true },
};

export const GRAVATAR_ANN = { display_name: 'Ann Example', profile_url: 'https://gravatar.com/annexample', avatar_url: 'https://0.gravatar.com/avatar/abc', location: 'Berlin' };

export async function startEnrichWorld(): Promise<EnrichWorld> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-enrich-'));
  const requests: EnrichWorld['requests'] = { mtaSts: [], rdap: [], gravatar: [] };
  const pems = await testCertificate(dir, ['mta-sts.trust.test']);
  const mtaSts = https.createServer({ cert: pems.cert, key: pems.key }, (req, res) => {
    requests.mtaSts.push(`${req.headers.host}${req.url}`);
    if (req.url === '/.well-known/mta-sts.txt' && req.headers.host === 'mta-sts.trust.test') res.writeHead(200, { 'content-type': 'text/plain' }).end(TRUST_POLICY);
    else res.writeHead(404).end();
  });
  const rdap = http.createServer((req, res) => {
    requests.rdap.push(req.url ?? '');
    if (req.url === '/rdap/domain/trust.test') res.writeHead(200, { 'content-type': 'application/rdap+json' }).end(JSON.stringify(RDAP_TRUST));
    else res.writeHead(404, { 'content-type': 'application/rdap+json' }).end('{"errorCode":404}');
  });
  const gravatar = http.createServer((req, res) => {
    requests.gravatar.push(req.url ?? '');
    if (req.url === `/v3/profiles/${gravatarHash('ann@trust.test')}`) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(GRAVATAR_ANN));
    else res.writeHead(404).end('{"error":"Profile not found"}');
  });
  const [mtaStsPort, rdapPort, gravatarPort] = [await listenLoopback(mtaSts), await listenLoopback(rdap), await listenLoopback(gravatar)];
  const bootstrap = writeRdapBootstrap(dir, ['test', 'example'], rdapPort);

  const smtpPort = await freeLoopbackPort();
  const smtp = [
    new SmtpFake('127.0.0.31', { users: ['ann'], starttls: true }),
    new SmtpFake('127.0.0.32', { users: ['bo'] }),
    new SmtpFake('127.0.0.33', { users: ['kim', 'info'] }),
    new SmtpFake('127.0.0.34', { users: ['gil'], greylist: true }),
  ];
  for (const s of smtp) await s.start(smtpPort);

  const dns = new DnsFake();
  const server = await dns.start();
  dns
    .set('trust.test', { mx: [{ preference: 10, exchange: 'mx.trust.test' }], a: ['127.0.0.40'], txt: ['v=spf1 mx -all', 'site-verification=abc'], ad: true })
    .set('mx.trust.test', { a: ['127.0.0.31'] })
    .set('_dmarc.trust.test', { txt: ['v=DMARC1; p=reject; adkim=s; aspf=s; rua=mailto:dmarc@trust.test'] })
    .set('selector1._domainkey.trust.test', { txt: ['v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC'] })
    .set('_mta-sts.trust.test', { txt: ['v=STSv1; id=20260101T000000'] })
    .set('mta-sts.trust.test', { a: ['127.0.0.1'] })
    .set('_smtp._tls.trust.test', { txt: ['v=TLSRPTv1; rua=mailto:tlsrpt@trust.test'] })
    .set('default._bimi.trust.test', { txt: ['v=BIMI1; l=https://trust.test/logo.svg; a=https://trust.test/vmc.pem'] })
    .set('31.0.0.127.bl.test', { a: ['127.0.0.2'] })
    .set('bare.test', { mx: [{ preference: 5, exchange: 'mx.bare.test' }] })
    .set('mx.bare.test', { a: ['127.0.0.32'] })
    .set('shop.de', { mx: [{ preference: 10, exchange: 'mx.shop.de' }], txt: ['v=spf1 mx ~all'] })
    .set('mx.shop.de', { a: ['127.0.0.33'] })
    .set('_dmarc.shop.de', { txt: ['v=DMARC1; p=none'] })
    .set('acme.co.uk', { mx: [{ preference: 10, exchange: 'mx.shop.de' }] })
    .set('grey.us', { mx: [{ preference: 10, exchange: 'mx.grey.us' }] })
    .set('mx.grey.us', { a: ['127.0.0.34'] });

  return {
    dns,
    smtp,
    requests,
    env: {
      SLUICE_DNS_SERVERS: server,
      SLUICE_SMTP_PORT: String(smtpPort),
      SLUICE_SMTP_ALLOW_PRIVATE: 'true',
      SLUICE_SMTP_HELO: 'verifier.sluice.test',
      SLUICE_SMTP_MAIL_FROM: 'verify@sluice.test',
      SLUICE_SMTP_TIMEOUT_MS: '2000',
      SLUICE_ENRICH_ALLOW_PRIVATE: 'true',
      SLUICE_ENRICH_CA_FILE: pems.caFile,
      SLUICE_ENRICH_HTTPS_PORT: String(mtaStsPort),
      SLUICE_RDAP_BOOTSTRAP: bootstrap,
      SLUICE_GRAVATAR_URL: `http://127.0.0.1:${gravatarPort}/v3`,
      SLUICE_DNSBL_ZONES: 'bl.test',
    },
    async stop() {
      await closeServers([mtaSts, rdap, gravatar]);
      await Promise.all(smtp.map((s) => s.stop()));
      await dns.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
