import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startReceiver, startTelegramStandIn, verifyDelivery, type Receiver, type TelegramStandIn } from './webhook-receiver.js';

const open: Array<Receiver | TelegramStandIn | Agent> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function receiver(options?: Parameters<typeof startReceiver>[0]): Promise<{ receiver: Receiver; agent: Agent }> {
  const r = await startReceiver(options);
  const agent = new Agent({ connect: { ca: r.ca } });
  open.push(r, agent);
  return { receiver: r, agent };
}

function signedDelivery(secret: string, body: string, id = 'msg_1') {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const v1 = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${timestamp}.${body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${v1}`,
    'x-sluice-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    'x-sluice-event': (JSON.parse(body) as { event: string }).event,
  };
}

describe('webhook receiver', () => {
  it('records an HTTPS request from a sender that trusts its CA', async () => {
    const { receiver: r, agent } = await receiver();
    const res = await request(r.url, { method: 'POST', body: '{"a":1}', headers: { 'X-Test': 'yes' }, dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    const [received] = await r.waitFor(1);
    expect(r.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/hook$/);
    expect(received).toMatchObject({ method: 'POST', path: '/hook', json: { a: 1 } });
    expect(received?.headers['x-test']).toBe('yes');
    expect(received?.rawBody.toString()).toBe('{"a":1}');
  });

  it('is not trusted by default, so a sender without the CA fails TLS verification', async () => {
    const { receiver: r } = await receiver();
    const agent = new Agent();
    open.push(agent);
    await expect(() => request(r.url, { method: 'POST', body: '{}', dispatcher: agent })).rejects.toMatchObject({
      code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY/),
    });
    expect(r.requests).toHaveLength(0);
  });

  it('is trusted by a child process given caFile as NODE_EXTRA_CA_CERTS', async () => {
    const { receiver: r } = await receiver();
    expect(fs.readFileSync(r.caFile, 'utf8')).toBe(r.ca);
    const script = `fetch(${JSON.stringify(r.url)}, { method: 'POST', body: 'x' }).then((res) => console.log(res.status))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: r.caFile } });
    expect(stdout.trim()).toBe('200');
    await r.close();
    expect(fs.existsSync(r.caFile)).toBe(false);
  });

  it('answers each request as the behaviour says and lists distinct message ids', async () => {
    const { receiver: r, agent } = await receiver({ behaviour: (n) => ({ status: n === 0 ? 503 : 204, headers: { 'retry-after': '1' } }) });
    const send = (id: string) => request(r.url, { method: 'POST', body: '{}', headers: { 'webhook-id': id }, dispatcher: agent });
    expect((await send('a')).statusCode).toBe(503);
    const second = await send('a');
    expect([second.statusCode, second.headers['retry-after']]).toEqual([204, '1']);
    await send('b');
    expect(r.messageIds()).toEqual(['a', 'b']);
  });

  it('destroys the socket without a response when told to', async () => {
    const { receiver: r, agent } = await receiver({ behaviour: () => ({ destroy: true }) });
    await expect(() => request(r.url, { method: 'POST', body: '{}', dispatcher: agent })).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(r.requests).toHaveLength(1);
  });

  it('holds a hanging request until close, and closes promptly anyway', async () => {
    const { receiver: r, agent } = await receiver({ behaviour: () => ({ hang: true }) });
    const pending = request(r.url, { method: 'POST', body: '{}', dispatcher: agent });
    // Handled from now on: it fails at close, before the `await` below, and would count as unhandled.
    void pending.catch(() => {});
    await r.waitFor(1);
    const started = Date.now();
    await r.close();
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(pending).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
  });

  it('rejects waitFor with the number of requests that did arrive', async () => {
    const { receiver: r } = await receiver({ protocol: 'http' });
    expect(r.url).toMatch(/^http:\/\//);
    await expect(() => r.waitFor(2, 50)).rejects.toThrow('expected 2 requests within 50 ms, but 0 arrived');
  });
});

describe('verifyDelivery', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const body = JSON.stringify({ event: 'bulk.completed', data: { job_id: 'job_1' } });

  async function deliver(headers: Record<string, string>) {
    const { receiver: r, agent } = await receiver();
    await request(r.url, { method: 'POST', body, headers, dispatcher: agent });
    const [received] = await r.waitFor(1);
    if (!received) throw new Error('no request recorded');
    return received;
  }

  it('accepts a correctly signed delivery', async () => {
    expect(verifyDelivery(await deliver(signedDelivery(secret, body)), secret)).toEqual([]);
  });

  it('reports both signatures when the body was tampered with', async () => {
    const received = await deliver(signedDelivery(secret, body));
    const tampered = { ...received, rawBody: Buffer.from(body.replace('job_1', 'job_2')) };
    const problems = verifyDelivery(tampered, secret);
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/X-Sluice-Signature[\s\S]*Standard Webhooks/);
  });

  it('reports both signatures when checked with the wrong secret', async () => {
    const received = await deliver(signedDelivery(secret, body));
    expect(verifyDelivery(received, `whsec_${randomBytes(24).toString('base64')}`)).toHaveLength(2);
  });

  it('reports an X-Sluice-Event that differs from the body', async () => {
    const received = await deliver({ ...signedDelivery(secret, body), 'x-sluice-event': 'bulk.failed' });
    expect(verifyDelivery(received, secret)).toEqual([expect.stringContaining('X-Sluice-Event bulk.failed')]);
  });
});

describe('Telegram stand-in', () => {
  it('records sendMessage calls and answers like the Bot API', async () => {
    const telegram = await startTelegramStandIn();
    open.push(telegram);
    const res = await request(`${telegram.baseUrl}/bot123:abc/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: 42, text: 'job done' }),
    });
    expect(await res.body.json()).toEqual({ ok: true, result: { message_id: 1 } });
    await telegram.waitFor(1);
    expect(telegram.messages).toEqual([{ token: '123:abc', chatId: '42', text: 'job done' }]);
  });

  it('answers the configured failing status with ok:false', async () => {
    const telegram = await startTelegramStandIn({ status: 429 });
    open.push(telegram);
    const res = await request(`${telegram.baseUrl}/botT/sendMessage`, { method: 'POST', body: JSON.stringify({ chat_id: '@c', text: 'x' }) });
    expect(res.statusCode).toBe(429);
    expect(await res.body.json()).toMatchObject({ ok: false, description: 'Too Many Requests' });
    expect(telegram.messages).toHaveLength(1);
  });
});
