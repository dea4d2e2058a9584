import { createDecipheriv } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/**
 * What an attacker with a copy of Sluice's files and the seal key can open (issue 27, finding 1).
 * Every string shaped like an AES-GCM seal (`iv.tag.body` in base64url) found anywhere in the bytes
 * is tried with every key known so far, starting from the seal key; whatever opens to 32 bytes of
 * base64 is a data key and joins the keys, and the pass repeats until nothing new opens. The
 * authentication tag makes a false opening impossible, so whatever comes back was really sealed.
 */
export function recoverSealed(haystack: string, sealKey: Buffer): Set<string> {
  const candidates = new Set<string>();
  for (const match of haystack.matchAll(/([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{2,})/g)) candidates.add(match[0]);
  const keys = [sealKey];
  const recovered = new Set<string>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const candidate of candidates) {
      for (const key of keys) {
        const plain = open(candidate, key);
        if (plain === undefined) continue;
        candidates.delete(candidate);
        recovered.add(plain);
        const asKey = Buffer.from(plain, 'base64');
        if (asKey.length === 32 && asKey.toString('base64') === plain) {
          keys.push(asKey);
          grew = true;
        }
        break;
      }
    }
  }
  return recovered;
}

/**
 * Opens `iv.tag.body` with `key`, trying shorter bodies too: in a database page the sealed text
 * may run straight into the bytes of the next column, which can look like base64url.
 */
function open(candidate: string, key: Buffer): string | undefined {
  const [iv, tag, body] = candidate.split('.').map((p) => Buffer.from(p, 'base64url'));
  for (let length = body!.length; length > 0; length--) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv!);
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(body!.subarray(0, length)), decipher.final()]).toString('utf8');
    } catch {
      // Not this length, or not this key.
    }
  }
  return undefined;
}

/** Every byte of every file under `dir`, as latin1 text (one character per byte), each file once. */
export function bytesUnder(dir: string): string {
  const parts: string[] = [];
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) parts.push(fs.readFileSync(full).toString('latin1'));
    }
  };
  walk(dir);
  return parts.join('\n');
}

/**
 * A logical dump of a PostgreSQL database: every row of every table of the public schema as text,
 * which is what pg_dump writes in its COPY sections (the system's pg_dump is older than the
 * embedded server and refuses to dump it).
 */
export async function dumpPostgres(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
    const out: string[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`);
      out.push(`-- ${name}`, ...rows.map((r) => r.row));
    }
    return out.join('\n');
  } finally {
    await client.end();
  }
}
