import fs from 'node:fs';
import type http from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { generate } from 'selfsigned';

/**
 * The pieces the loopback worlds (domain-world.ts, enrich-world.ts) build their HTTP fakes from: a
 * test CA whose certificate names the fake sites, servers on 127.0.0.1 and a free port, and an RDAP
 * bootstrap file pointing at a loopback registry.
 */

/** A self-signed CA certificate for `names`, valid from yesterday for 30 days, written to `dir/ca.pem`. */
export async function testCertificate(dir: string, names: string[]): Promise<{ cert: string; key: string; caFile: string }> {
  const pems = await generate([{ name: 'commonName', value: names[0]! }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate: new Date(Date.now() - 86_400_000),
    notAfterDate: new Date(Date.now() + 30 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
    ],
  });
  const caFile = path.join(dir, 'ca.pem');
  fs.writeFileSync(caFile, pems.cert);
  return { cert: pems.cert, key: pems.private, caFile };
}

/** Listens on 127.0.0.1 and a port the system picks; answers the port. */
export async function listenLoopback(server: http.Server | https.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Closes the servers, cutting kept-alive connections first so that the close does not wait on them. */
export async function closeServers(servers: (http.Server | https.Server)[]): Promise<void> {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

/** An RFC 9224 bootstrap file (`dir/dns.json`) sending the `tlds` to the loopback registry on `port`. */
export function writeRdapBootstrap(dir: string, tlds: string[], port: number): string {
  const file = path.join(dir, 'dns.json');
  fs.writeFileSync(file, JSON.stringify({ version: '1.0', services: [[tlds, [`http://127.0.0.1:${port}/rdap/`]]] }));
  return file;
}
