import { createRequire } from 'node:module';
import type { ValidityFlags } from './validity-result.js';

const require = createRequire(import.meta.url);

/**
 * The lists behind the flags, each a maintained npm package (docs/email-verification.md names
 * versions, licences and dates). Loaded once per process on first use: the disposable list is
 * 120,000 domains, which a process that never verifies an address should not hold.
 */
interface Lists {
  disposable: ReadonlySet<string>;
  free: ReadonlySet<string>;
  role: ReadonlySet<string>;
}

let lists: Lists | undefined;

function load(): Lists {
  lists ??= {
    // disposable-email-domains (MIT): index.json, an array of domains.
    disposable: new Set((require('disposable-email-domains') as string[]).map((d) => d.toLowerCase())),
    // email-providers (ISC): all.json, free mailbox providers (gmail.com, yahoo.com, gmx.de, ...).
    free: new Set((require('email-providers/all.json') as string[]).map((d) => d.toLowerCase())),
    // role-based-email-addresses (MIT): local parts such as info, sales, noreply.
    role: new Set((require('role-based-email-addresses') as string[]).map((r) => r.toLowerCase())),
  };
  return lists;
}

/**
 * A domain is disposable when it or a parent is listed (`x.mailinator.com` as `mailinator.com`); a
 * role account is matched on the local part without its `+tag`.
 */
export function flagsOf(local: string, domain: string): ValidityFlags {
  const { disposable, free, role } = load();
  const labels = domain.split('.');
  let isDisposable = false;
  for (let i = 0; i < labels.length - 1 && !isDisposable; i++) isDisposable = disposable.has(labels.slice(i).join('.'));
  const bare = local.startsWith('"') ? local : local.split('+')[0]!;
  return { disposable: isDisposable, role_account: role.has(bare), free_provider: free.has(domain) };
}
