import { EMAIL_BREACHES_KIND, type EmailBreachResult } from '../src/lookups/email/embedded-email-breach-index.js';
import { normaliseEmail } from './gender.js';
import { EMAIL_ALIASES } from './key-aliases.js';
import type { Pipeline } from './pipeline.js';

/** How a cell lists several breach names or data classes; the import refuses a data class that holds it. */
export const LIST_SEPARATOR = ';';

/**
 * Job type `email_breaches`: one email address per row, read exactly as the gender job reads it
 * (an address the two disagreed on would be a different key, and a second charge, in a monitor or
 * a job of both), answered from the email breach index.
 */
export const emailBreachesPipeline: Pipeline<EmailBreachResult> = {
  type: 'email_breaches',
  lookupKind: EMAIL_BREACHES_KIND,
  keyHeader: 'email',
  keyAliases: EMAIL_ALIASES,
  headerless: true,
  normalise: normaliseEmail,
  // `email_breached`, not `breached`: a job that runs phone_breaches too has a `breached` column of
  // its own, and two columns of one name would make the header ambiguous for every reader.
  resultColumns: ['email_breached', 'breach_count', 'first_breach', 'last_breach', 'breaches', 'exposed_data'],
  resultCells(result: EmailBreachResult): string[] {
    const info = result.breach_info;
    return [
      String(info.breached),
      String(info.count),
      info.first_breach ?? '',
      info.last_breach ?? '',
      info.breaches.map((b) => b.name).join(LIST_SEPARATOR),
      info.exposed_data.join(LIST_SEPARATOR),
    ];
  },
  isFound(result: EmailBreachResult): boolean {
    return result.breach_info.breached;
  },
};
