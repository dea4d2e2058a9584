import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import {
  assertConnectable,
  blockedReason,
  checkWebhookUrl,
  guardedLookup,
  type AddressPolicy,
  type Resolver,
} from './address-policy.js';

function fakeResolver(table: Record<string, string[]>): Resolver {
  const hosts = new Map(Object.entries(table));
  return async (hostname) => {
    const addresses = hosts.get(hostname);
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const RESOLVER = fakeResolver({
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'mixed.example.com': ['93.184.215.14', '10.0.0.5'],
  'rebind.example.com': ['127.0.0.1'],
  'metadata.example.com': ['169.254.169.254'],
  'mapped.example.com': ['::ffff:7f00:1'],
  'empty.example.com': [],
});
const STRICT: AddressPolicy = { allowPrivate: false, resolve: RESOLVER };
const DEV: AddressPolicy = { allowPrivate: true, resolve: RESOLVER };

describe('blockedReason', () => {
  it.each([
    ['0.0.0.0', 'unspecified'], ['0.255.255.255', 'unspecified'],
    ['10.0.0.0', 'private'], ['10.255.255.255', 'private'], ['11.0.0.0', undefined], ['9.255.255.255', undefined],
    ['100.63.255.255', undefined], ['100.64.0.0', 'cgnat'], ['100.127.255.255', 'cgnat'], ['100.128.0.0', undefined],
    ['100.100.100.200', 'metadata'],
    ['127.0.0.1', 'loopback'], ['127.255.255.255', 'loopback'], ['128.0.0.0', undefined],
    ['169.254.0.0', 'link_local'], ['169.254.255.255', 'link_local'], ['169.255.0.0', undefined],
    ['169.254.169.254', 'metadata'], ['169.254.170.2', 'metadata'], ['168.63.129.16', 'metadata'],
    ['172.15.255.255', undefined], ['172.16.0.0', 'private'], ['172.31.255.255', 'private'], ['172.32.0.0', undefined],
    ['192.0.0.0', 'reserved'], ['192.0.0.255', 'reserved'], ['192.0.1.0', undefined],
    ['192.0.2.0', 'documentation'], ['192.0.2.255', 'documentation'], ['192.88.99.1', 'reserved'],
    ['192.167.255.255', undefined], ['192.168.0.0', 'private'], ['192.168.255.255', 'private'], ['192.169.0.0', undefined],
    ['198.17.255.255', undefined], ['198.18.0.0', 'benchmarking'], ['198.19.255.255', 'benchmarking'], ['198.20.0.0', undefined],
    ['198.51.100.7', 'documentation'], ['203.0.113.255', 'documentation'], ['203.0.114.0', undefined],
    ['223.255.255.255', undefined], ['224.0.0.0', 'multicast'], ['239.255.255.255', 'multicast'],
    ['240.0.0.0', 'reserved'], ['255.255.255.254', 'reserved'], ['255.255.255.255', 'broadcast'],
    ['8.8.8.8', undefined], ['1.1.1.1', undefined],
  ])('judges IPv4 %s as %s', (ip, reason) => {
    expect(blockedReason(ip)).toBe(reason);
  });

  it.each([
    ['::', 'unspecified'], ['::1', 'loopback'], ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::', 'unique_local'], ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique_local'], ['fd00:ec2::254', 'metadata'],
    ['fe80::1', 'link_local'], ['febf:ffff::1', 'link_local'], ['fe80::1%eth0', 'link_local'], ['2606:4700::1%eth0', 'link_local'],
    ['fec0::1', 'site_local'], ['ff02::1', 'multicast'], ['ff00::', 'multicast'],
    ['100::1', 'discard'], ['2001::1', 'reserved'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['2001:2::1', 'benchmarking'], ['2001:db8::1', 'documentation'], ['3fff::1', 'documentation'],
    ['2001:1ff::1', 'reserved'], ['2001:200::1', undefined],
    ['5f00::1', 'reserved'], ['1fff:ffff::1', 'reserved'], ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', undefined], ['2001:4860:4860::8888', undefined], ['2a00:1450:4001:80b::200e', undefined],
  ])('judges IPv6 %s as %s', (ip, reason) => {
    expect(blockedReason(ip)).toBe(reason);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
    ['::FFFF:10.1.2.3', 'private'], ['::ffff:a01:203', 'private'], ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:0.0.0.0', 'unspecified'], ['::ffff:8.8.8.8', undefined],
    ['::127.0.0.1', 'loopback'], ['::8.8.8.8', 'reserved'], ['::a00:1', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'], ['64:ff9b::a9fe:a9fe', 'metadata'], ['64:ff9b::808:808', undefined],
    ['64:ff9b:1::192.168.1.1', 'private'], ['64:ff9b:1::8.8.8.8', undefined], ['64:ff9b:1:7f00:1::', 'reserved'],
    ['2002:7f00:1::', 'loopback'], ['2002:a9fe:a9fe::1', 'metadata'], ['2002:c0a8:101::', 'private'], ['2002:808:808::1', undefined],
  ])('judges the IPv4 embedded in %s (%s)', (ip, reason) => {
    expect(blockedReason(ip)).toBe(reason);
  });

  it.each(['', 'example.com', '127.1', '0x7f.0.0.1', '010.0.0.1', '1.2.3.4.5', '::ffff:999.0.0.1', '1:2:3', '[::1]', 'fe80::1%'])(
    'calls %j not_an_ip rather than guessing',
    (text) => {
      expect(blockedReason(text)).toBe('not_an_ip');
    },
  );
});

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('checkWebhookUrl', () => {
  it('accepts an https URL whose name resolves only to public addresses, and returns it parsed', async () => {
    const url = await checkWebhookUrl('https://hooks.example.com/in?x=1', STRICT);
    expect(url.href).toBe('https://hooks.example.com/in?x=1');
  });

  it.each([
    ['not a url', 'not a valid URL'],
    ['http://hooks.example.com/', 'https'],
    ['ftp://hooks.example.com/', 'https'],
    ['https://user:secret@hooks.example.com/', 'credentials'],
    ['https://user@hooks.example.com/', 'credentials'],
    ['https://nowhere.example.com/', 'does not resolve'],
    ['https://empty.example.com/', 'does not resolve'],
  ])('rejects %s as an invalid URL (%s)', async (raw, words) => {
    const error = await rejection(checkWebhookUrl(raw, STRICT));
    expect(error.code).toBe(ERROR_CODES.invalidUrl);
    expect(error.statusCode).toBe(422);
    expect(error.message).toContain(words);
  });

  it.each([
    ['https://127.0.0.1/', 'loopback'],
    ['https://2130706433/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://0/', 'unspecified'],
    ['https://[::1]:8443/', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:a9fe:a9fe]/', 'metadata'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['https://localhost/', 'local_name'],
    ['https://LOCALHOST./', 'local_name'],
    ['https://api.localhost/', 'local_name'],
    ['https://metadata.google.internal/', 'local_name'],
    ['https://rebind.example.com/', 'loopback'],
    ['https://mapped.example.com/', 'loopback'],
    ['https://metadata.example.com/', 'metadata'],
    ['https://mixed.example.com/', 'private'],
  ])('blocks %s (%s)', async (raw, reason) => {
    const error = await rejection(checkWebhookUrl(raw, STRICT));
    expect(error.code).toBe(ERROR_CODES.blockedAddress);
    expect(error.statusCode).toBe(422);
    expect(error.details?.['reason']).toBe(reason);
  });

  it('tells the customer only that the name does not resolve to a public address, keeping the answer for logs', async () => {
    const error = await rejection(checkWebhookUrl('https://mixed.example.com/', STRICT));
    expect(error.message).toBe('webhook URL host mixed.example.com does not resolve to a public address');
    expect(error.message).not.toContain('10.0.0.5');
    expect(error.message).not.toContain('private');
    expect(error.details).toMatchObject({ host: 'mixed.example.com', address: '10.0.0.5', reason: 'private' });
  });

  it('with allowPrivate, lets plain http reach loopback and private names', async () => {
    expect((await checkWebhookUrl('http://127.0.0.1:8080/', DEV)).port).toBe('8080');
    expect((await checkWebhookUrl('http://mixed.example.com/', DEV)).hostname).toBe('mixed.example.com');
  });

  it('with allowPrivate, still refuses names that do not resolve and URLs that are not http(s)', async () => {
    expect((await rejection(checkWebhookUrl('http://nowhere.example.com/', DEV))).code).toBe(ERROR_CODES.invalidUrl);
    expect((await rejection(checkWebhookUrl('ftp://127.0.0.1/', DEV))).code).toBe(ERROR_CODES.invalidUrl);
  });
});

function lookupWith(policy: AddressPolicy, hostname: string, options: object): Promise<unknown[]> {
  return new Promise((resolve) => guardedLookup(policy)(hostname, options, (...args: unknown[]) => resolve(args)));
}

describe('guardedLookup', () => {
  it('fits where net.connect and tls.connect expect a lookup', () => {
    const lookup: LookupFunction = guardedLookup(STRICT);
    expect(typeof lookup).toBe('function');
  });

  it('calls back with a non-retryable blockedAddress error when any answer is private', async () => {
    const [error] = await lookupWith(STRICT, 'mixed.example.com', {});
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(ERROR_CODES.blockedAddress);
    expect((error as AppError).retryable).toBe(false);
  });

  it('calls back with (null, address, family) for a public name', async () => {
    expect(await lookupWith(STRICT, 'hooks.example.com', {})).toEqual([null, '93.184.215.14', 4]);
    expect(await lookupWith(STRICT, 'hooks.example.com', { family: 6 })).toEqual([
      null,
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      6,
    ]);
  });

  it('calls back with every address when options.all is set', async () => {
    expect(await lookupWith(STRICT, 'hooks.example.com', { all: true })).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
    ]);
  });

  it('passes a DNS failure through as the original error', async () => {
    const [error] = await lookupWith(STRICT, 'nowhere.example.com', {});
    expect(error).not.toBeInstanceOf(AppError);
    expect((error as { code?: string }).code).toBe('ENOTFOUND');
  });

  it('with allowPrivate, hands back private answers', async () => {
    expect(await lookupWith(DEV, 'rebind.example.com', {})).toEqual([null, '127.0.0.1', 4]);
  });

  it('stops a real HTTP request to a name that rebinds to loopback, and lets it through with allowPrivate', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const get = (policy: AddressPolicy) =>
      new Promise<unknown>((resolve) => {
        const req = request({ host: 'rebind.example.com', port, lookup: guardedLookup(policy) }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.on('error', resolve).end();
      });
    try {
      expect(((await get(STRICT)) as AppError).code).toBe(ERROR_CODES.blockedAddress);
      expect(await get(DEV)).toBe(200);
    } finally {
      server.close();
    }
  });
});

describe('assertConnectable', () => {
  it('throws blockedAddress for a private literal and passes a public one', () => {
    expect(() => assertConnectable('10.0.0.1', STRICT)).toThrow(expect.objectContaining({ code: ERROR_CODES.blockedAddress }));
    expect(() => assertConnectable('[::ffff:7f00:1]', STRICT)).toThrow(AppError);
    expect(() => assertConnectable('8.8.8.8', STRICT)).not.toThrow();
    expect(() => assertConnectable('127.0.0.1', DEV)).not.toThrow();
  });
});
