import { PassThrough } from 'node:stream';
import type { CliIo } from '../../src/cli/cli-io.js';

/** A command's io whose stdout is kept as text; stderr is dropped. */
export function captureIo(): { io: CliIo; stdout: () => string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return { io: { stdout: out as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream }, stdout: () => text };
}
