#!/usr/bin/env node
// `npm test`'s first step: the build (which the process tests run from dist/) and the typecheck
// (tests and the dashboard included) side by side rather than one after the other. tsc runs on one
// core, so on two cores the pair takes about as long as the slower of the two. Each one's output is
// printed whole when it ends, so that the two never interleave; the exit status fails if either did.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(script) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ script, code: 1, output: `${output}${error.message}\n`, ms: Date.now() - started }));
    child.on('close', (code, signal) => resolve({ script, code: code ?? (signal ? 1 : 0), output, ms: Date.now() - started }));
  });
}

const results = await Promise.all(['build', 'typecheck'].map(run));
for (const { script, code, output, ms } of results) {
  console.log(`== ${script}: ${code === 0 ? 'ok' : `failed (exit ${code})`} in ${(ms / 1000).toFixed(1)} s`);
  if (output.trim() !== '') process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
