import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Nothing but this origin's own script and style, and no framing: a value that slipped into markup
 * still could not run, load from elsewhere or send the key anywhere.
 */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const FILES = {
  '/': { name: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/dashboard.js': { name: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/dashboard.css': { name: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/dashboard/job-reasons.js': { name: 'job-reasons.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/monitors.js': { name: 'monitors.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/lists.js': { name: 'lists.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/csv-columns.js': { name: 'csv-columns.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/dom.js': { name: 'dom.js', type: 'text/javascript; charset=utf-8' },
  '/favicon.svg': { name: 'favicon.svg', type: 'image/svg+xml' },
} as const;

/**
 * `/`: the dashboard, three static files over the public API. Read once at start-up; not part of
 * the OpenAPI document, since it is no API.
 */
export async function dashboardRoutes(app: FastifyInstance): Promise<void> {
  const dir = sourceDir(fileURLToPath(new URL('../dashboard/', import.meta.url)));
  for (const [url, file] of Object.entries(FILES)) {
    const body = fs.readFileSync(path.join(dir, file.name));
    app.get(url, { schema: { hide: true } }, async (_request, reply) => send(reply, file.type, body));
  }
}

function send(reply: FastifyReply, type: string, body: Buffer): FastifyReply {
  return reply
    .header('Content-Type', type)
    .header('Content-Security-Policy', DASHBOARD_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .header('Cache-Control', 'no-cache')
    .send(body);
}

/** tsc does not copy these files: from dist/ they are read from the source tree (as migrations are). */
function sourceDir(dir: string): string {
  if (fs.existsSync(dir)) return dir;
  const marker = `${path.sep}dist${path.sep}`;
  const at = dir.lastIndexOf(marker);
  return at < 0 ? dir : dir.slice(0, at) + path.sep + dir.slice(at + marker.length);
}
