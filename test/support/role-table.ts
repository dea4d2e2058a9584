import fs from 'node:fs';
import path from 'node:path';
import type { Role } from '../../src/auth/key-store.js';
import { REPO_ROOT } from './test-engine.js';

/** The order the role matrices of README.md ("Roles and quotas") give their columns in. */
export const ROLE_ORDER: Role[] = ['readonly', 'tech', 'admin'];

export type RoleRow = { name: string } & Record<Role, string>;

/**
 * The rows of the README.md table whose header is `| <first> | readonly | tech | admin |`,
 * or undefined when the page has no such table.
 */
export function roleTable(first: string): RoleRow[] | undefined {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const start = doc.indexOf(`| ${first} | readonly | tech | admin |`);
  if (start < 0) return undefined;
  const rows: RoleRow[] = [];
  for (const line of doc.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [name, readonly, tech, admin] = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.push({ name: name!, readonly: readonly!, tech: tech!, admin: admin! });
  }
  return rows;
}
