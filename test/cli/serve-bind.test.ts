import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { boundAddress } from '../../src/main/serve.js';
import { cliEnv, killChildren, removeScratchDirs, scratchDir, spawnCli, type CliChild } from '../support/cli-process.js';

const LISTENING = /listening on (http:\/\/\S+)/;

afterEach(async () => {
  await killChildren();
  removeScratchDirs();
});

async function listening(child: CliChild, timeoutMs = 20_000): Promise<URL> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = LISTENING.exec(child.stderr());
    if (match) return new URL(match[1]!);
    if (child.child.exitCode !== null || child.child.signalCode !== null) throw new Error(`serve exited before listening: ${child.stderr()}`);
    if (Date.now() > deadline) throw new Error(`serve not listening after ${timeoutMs} ms: ${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a TCP connection to host:port is accepted (true) or refused (false). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNREFUSED' ? resolve(false) : reject(e)));
  });
}

function serve(args: string[], env: Record<string, string> = {}): CliChild {
  return spawnCli(['serve', '--port', '0', '--no-worker', ...args], cliEnv(scratchDir(), { SLUICE_WEBHOOK_SENDER: 'false', ...env }));
}

describe('sluice serve binds loopback unless asked', () => {
  it('with no --host and no SLUICE_HOST, listens on 127.0.0.1 only and says so', async () => {
    const url = await listening(serve([]));
    expect(url.hostname).toBe('127.0.0.1');
    const port = Number(url.port);
    expect(await accepts('127.0.0.1', port)).toBe(true);
    // A socket bound to every interface would take this one too (Linux routes all of 127/8 to lo).
    expect(await accepts('127.0.0.2', port)).toBe(false);
  });

  it('binds the address of SLUICE_HOST, and --host wins over it', async () => {
    const fromEnv = await listening(serve([], { SLUICE_HOST: '127.0.0.3' }));
    expect(fromEnv.hostname).toBe('127.0.0.3');
    expect(await accepts('127.0.0.3', Number(fromEnv.port))).toBe(true);
    expect(await accepts('127.0.0.1', Number(fromEnv.port))).toBe(false);

    const fromFlag = await listening(serve(['--host', '127.0.0.2'], { SLUICE_HOST: '127.0.0.3' }));
    expect(fromFlag.hostname).toBe('127.0.0.2');
    expect(await accepts('127.0.0.2', Number(fromFlag.port))).toBe(true);
    expect(await accepts('127.0.0.3', Number(fromFlag.port))).toBe(false);
  });

  it('refuses a SLUICE_HOST that is not an address, naming it, before binding anything', async () => {
    const child = serve([], { SLUICE_HOST: 'every-interface' });
    const code = await new Promise<number | null>((resolve) => child.child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(child.stderr()).toContain('SLUICE_HOST');
  });
});

describe('the address serve prints', () => {
  // A wildcard bind is not tried here: tests listen on loopback addresses only.
  it('names a wildcard bind as every interface, not as 127.0.0.1', () => {
    expect(boundAddress({ address: '0.0.0.0', family: 'IPv4', port: 8080 })).toBe('http://0.0.0.0:8080 (all interfaces)');
    expect(boundAddress({ address: '::', family: 'IPv6', port: 8080 })).toBe('http://[::]:8080 (all interfaces)');
    expect(boundAddress({ address: '127.0.0.1', family: 'IPv4', port: 8080 })).toBe('http://127.0.0.1:8080');
  });
});
