import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium, headless, for the dashboard tests in test/ui/. npm cannot provide it, so a
 * missing one is a failure that says how to install it (SLUICE_UI_TESTS=off skips those tests).
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) {
    throw new Error(
      'No Chromium found (looked for SLUICE_CHROMIUM, /usr/bin/chromium, chromium on PATH). Install it with `apt-get install -y chromium`, or set SLUICE_UI_TESTS=off to skip this test.',
    );
  }
  return chromium.launch({ executablePath, args: ['--no-sandbox'] });
}

function findChromium(): string | undefined {
  const named = process.env.SLUICE_CHROMIUM;
  if (named) return fs.existsSync(named) ? named : undefined;
  for (const candidate of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (fs.existsSync(candidate)) return candidate;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}
