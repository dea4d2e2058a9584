/**
 * First tokens that are not given names although the name lists hold some of them: surname
 * particles (`de.silva@`, `van.dijk@` start with a surname) and role words (`dev@`, `general@`).
 */
const NOT_FIRST_NAMES = new Set([
  'de', 'da', 'di', 'du', 'del', 'della', 'der', 'den', 'van', 'von', 'la', 'le', 'el', 'dos', 'das',
  'dev', 'general', 'boss',
]);

const DIACRITICS = /\p{M}+/gu;
const NON_LETTERS = /[^a-z]+/;
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The first name an address most likely starts with, lower-cased ASCII letters, or `undefined`
 * when the local part does not start with one:
 *
 * - the local part loses its `+tag`, diacritics are folded (`josé` reads `jose`), and it is split
 *   on everything that is not a letter (`.`, `_`, `-`, digits and other symbols);
 * - the first token is the name if it has at least 2 letters: `john.smith` -> `john`,
 *   `mary-jane` -> `mary`, `42.anna` -> `anna`;
 * - a lone initial gives `undefined`, not the next token: in `j.smith` that token is a surname,
 *   and guessing from surnames would be wrong more often than right;
 * - so does a surname particle or a role word (see NOT_FIRST_NAMES).
 *
 * Known limit: run-together names (`johnsmith`) are not split. Matching the longest known name
 * prefix would also turn `marketing` into `mark` and `jobs` into `jo`, so such addresses are left
 * to come out `unknown`.
 */
export function firstNameFromEmail(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  let local = (at === -1 ? email : email.slice(0, at)).toLowerCase();
  const plus = local.indexOf('+');
  if (plus !== -1) local = local.slice(0, plus);
  if (!ASCII.test(local)) local = local.normalize('NFD').replace(DIACRITICS, '');
  const tokens = local.split(NON_LETTERS);
  const first = tokens[0] === '' ? tokens[1] : tokens[0];
  if (first === undefined || first.length < 2 || NOT_FIRST_NAMES.has(first)) return undefined;
  return first;
}
