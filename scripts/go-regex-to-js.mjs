// Translates a Go (RE2) regular expression into JavaScript source that matches the same text.
// Used once, by import-gitleaks-rules.mjs, so that the rule file holds JavaScript patterns and the
// scanner never translates at run time. Differences handled, each one a way a rule would otherwise
// match something else in JavaScript:
//  - flag groups: Go scopes (?i) to the rest of its group and has (?i:...) and (?-i:...); Node 20's
//    RegExp has no inline flags, so case-insensitivity is written out letter by letter ([aA]) unless
//    the whole pattern is case-insensitive, when the `i` flag does it;
//  - `.` in Go matches \r (JavaScript's does not) and, under (?s), \n as well;
//  - \s is [\t\n\f\r ] in Go (JavaScript adds \v and Unicode spaces);
//  - \z and \A; ^ and $ under (?m) (JavaScript's `m` flag cannot be scoped);
//  - POSIX classes ([[:alnum:]]) and a `]` first in a class, which Go reads as a literal;
//  - (?P<name>...) named groups; \Q...\E quoting; \x{...} code points.
// Anything else Go-only (Unicode classes \p, \C) throws, and the rule is listed as unsupported.

const POSIX = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};
const GO_SPACE = '\\t\\n\\f\\r ';

export class UnsupportedRegex extends Error {}

/** @returns {{ source: string, flags: string }} */
export function goRegexToJs(pattern) {
  const wholeI = /^\(\?i\)/.test(pattern) && !/\(\?[a-z]*-[a-z]*i/.test(pattern);
  const body = wholeI ? pattern.slice(4) : pattern;
  const out = translate(body, { i: wholeI, s: false, m: false }, wholeI);
  return { source: out, flags: wholeI ? 'i' : '' };
}

function isLetter(c) {
  return /^[A-Za-z]$/.test(c);
}

function foldChar(c, flags, nativeI) {
  if (!flags.i || nativeI || !isLetter(c)) return null;
  return `[${c.toLowerCase()}${c.toUpperCase()}]`;
}

function escapeLiteral(c) {
  return /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c;
}

function translate(p, startFlags, nativeI) {
  let i = 0;
  let out = '';
  // One entry per open group: the flags outside it, restored when it closes.
  const stack = [];
  let flags = { ...startFlags };

  const literal = (c) => {
    const folded = foldChar(c, flags, nativeI);
    return folded ?? escapeLiteral(c);
  };

  while (i < p.length) {
    const c = p[i];
    if (c === '\\') {
      const [text, next] = escape(p, i, flags, nativeI, false);
      out += text;
      i = next;
    } else if (c === '[') {
      const [text, next] = charClass(p, i, flags, nativeI);
      out += text;
      i = next;
    } else if (c === '(') {
      if (p.startsWith('(?P<', i) || p.startsWith('(?<', i)) {
        const start = p.indexOf('<', i) + 1;
        const end = p.indexOf('>', start);
        out += `(?<${p.slice(start, end)}>`;
        stack.push(flags);
        flags = { ...flags };
        i = end + 1;
      } else if (p[i + 1] === '?') {
        const m = /^\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])/.exec(p.slice(i));
        if (!m) throw new UnsupportedRegex(`unknown group syntax at ${i}`);
        const next = applyFlags(flags, m[1], m[2] ?? '', nativeI);
        if (m[3] === ')') {
          // (?i) alone: the rest of the enclosing group.
          flags = next;
        } else {
          stack.push(flags);
          flags = next;
          out += '(?:';
        }
        i += m[0].length;
      } else {
        stack.push(flags);
        flags = { ...flags };
        out += '(';
        i++;
      }
    } else if (c === ')') {
      if (stack.length === 0) throw new UnsupportedRegex('unbalanced )');
      flags = stack.pop();
      out += ')';
      i++;
    } else if (c === '.') {
      out += flags.s ? '[\\s\\S]' : '[^\\n]';
      i++;
    } else if (c === '^') {
      out += flags.m ? '(?<![^\\n])' : '(?<![\\s\\S])';
      i++;
    } else if (c === '$') {
      out += flags.m ? '(?![^\\n])' : '(?![\\s\\S])';
      i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i));
      if (m) {
        out += m[0];
        i += m[0].length;
      } else {
        out += '\\{';
        i++;
      }
    } else if (c === '}' || c === ']') {
      out += `\\${c}`;
      i++;
    } else if ('*+?|'.includes(c)) {
      out += c;
      i++;
    } else if (c === '/') {
      out += '\\/';
      i++;
    } else {
      out += literal(c);
      i++;
    }
  }
  if (stack.length > 0) throw new UnsupportedRegex('unbalanced (');
  return out;
}

function applyFlags(flags, on, off, nativeI) {
  const next = { ...flags };
  for (const f of on) {
    if (!'ismU'.includes(f)) throw new UnsupportedRegex(`flag ${f}`);
    if (f === 'U') throw new UnsupportedRegex('ungreedy flag (?U)');
    next[f] = true;
  }
  for (const f of off) {
    if (f === 'i' && nativeI) throw new UnsupportedRegex('(?-i) inside a case-insensitive pattern');
    next[f] = false;
  }
  return next;
}

/** Returns [javascript text, next index]; `inClass` gives the text that goes inside [...]. */
function escape(p, i, flags, nativeI, inClass) {
  const e = p[i + 1];
  if (e === undefined) throw new UnsupportedRegex('trailing backslash');
  if (e === 'z') {
    if (inClass) throw new UnsupportedRegex('\\z in a class');
    return ['(?![\\s\\S])', i + 2];
  }
  if (e === 'A') {
    if (inClass) throw new UnsupportedRegex('\\A in a class');
    return ['(?<![\\s\\S])', i + 2];
  }
  if (e === 's') return [inClass ? GO_SPACE : `[${GO_SPACE}]`, i + 2];
  if (e === 'S') return [inClass ? '\\S' : `[^${GO_SPACE}]`, i + 2];
  if ('dDwWbB'.includes(e)) return [`\\${e}`, i + 2];
  if ('tnrfv'.includes(e)) return [`\\${e}`, i + 2];
  if (e === 'a') return ['\\x07', i + 2];
  if (e === 'x') {
    if (p[i + 2] === '{') {
      const end = p.indexOf('}', i);
      const code = parseInt(p.slice(i + 3, end), 16);
      if (code > 0xffff) throw new UnsupportedRegex('code point above U+FFFF');
      return [code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`, end + 1];
    }
    return [`\\x${p.slice(i + 2, i + 4)}`, i + 4];
  }
  if (e === 'Q') {
    const end = p.indexOf('\\E', i + 2);
    const text = p.slice(i + 2, end === -1 ? p.length : end);
    const quoted = [...text].map((c) => (inClass ? classLiteral(c) : foldChar(c, flags, nativeI) ?? escapeLiteral(c))).join('');
    return [quoted, end === -1 ? p.length : end + 2];
  }
  if (e === 'p' || e === 'P') throw new UnsupportedRegex('Unicode class \\p');
  if (e === 'C') throw new UnsupportedRegex('\\C (any byte)');
  if (/[0-9]/.test(e)) throw new UnsupportedRegex('octal or back-reference escape');
  if (/[A-Za-z]/.test(e)) throw new UnsupportedRegex(`escape \\${e}`);
  // An escaped punctuation character is that character in both languages.
  return [inClass ? classLiteral(e) : `\\${e}`, i + 2];
}

function classLiteral(c) {
  return /[\\\]^-]/.test(c) ? `\\${c}` : c;
}

function charClass(p, i, flags, nativeI) {
  let j = i + 1;
  let negate = false;
  if (p[j] === '^') {
    negate = true;
    j++;
  }
  const items = [];
  let first = true;
  while (j < p.length && (p[j] !== ']' || first)) {
    first = false;
    if (p.startsWith('[:', j)) {
      const end = p.indexOf(':]', j);
      const name = p.slice(j + 2, end);
      const set = POSIX[name.replace(/^\^/, '')];
      if (!set || name.startsWith('^')) throw new UnsupportedRegex(`POSIX class [:${name}:]`);
      items.push({ raw: set });
      j = end + 2;
      continue;
    }
    let lo;
    if (p[j] === '\\') {
      const e = p[j + 1];
      if ('dDwWsSbB'.includes(e) || e === 'Q' || e === 'p' || e === 'P') {
        const [text, next] = escape(p, j, flags, nativeI, true);
        items.push({ raw: text });
        j = next;
        continue;
      }
      const [text, next] = escape(p, j, flags, nativeI, true);
      lo = { text, char: decodeEscaped(text) };
      j = next;
    } else {
      lo = { text: classLiteral(p[j]), char: p[j] };
      j++;
    }
    if (p[j] === '-' && p[j + 1] !== ']' && j + 1 < p.length) {
      let hi;
      if (p[j + 1] === '\\') {
        const [text, next] = escape(p, j + 1, flags, nativeI, true);
        hi = { text, char: decodeEscaped(text) };
        j = next;
      } else {
        hi = { text: classLiteral(p[j + 1]), char: p[j + 1] };
        j += 2;
      }
      items.push({ lo, hi });
    } else {
      items.push({ lo });
    }
  }
  if (p[j] !== ']') throw new UnsupportedRegex('unterminated class');
  let body = '';
  for (const item of items) {
    if (item.raw !== undefined) {
      body += item.raw;
      continue;
    }
    body += item.hi ? `${item.lo.text}-${item.hi.text}` : item.lo.text;
    if (flags.i && !nativeI) body += foldRange(item.lo.char, (item.hi ?? item.lo).char);
  }
  return [`[${negate ? '^' : ''}${body}]`, j + 1];
}

function decodeEscaped(text) {
  if (text.startsWith('\\x')) return String.fromCharCode(parseInt(text.slice(2), 16));
  if (text.startsWith('\\u')) return String.fromCharCode(parseInt(text.slice(2), 16));
  const named = { '\\t': '\t', '\\n': '\n', '\\r': '\r', '\\f': '\f', '\\v': '\v' }[text];
  if (named) return named;
  return text.startsWith('\\') ? text.slice(1) : text;
}

/** The other case of the letters in lo..hi, as class text. */
function foldRange(lo, hi) {
  const parts = [];
  const add = (from, to, shift) => {
    const a = Math.max(lo.charCodeAt(0), from);
    const b = Math.min(hi.charCodeAt(0), to);
    if (a > b) return;
    const x = String.fromCharCode(a + shift);
    const y = String.fromCharCode(b + shift);
    parts.push(a === b ? x : `${x}-${y}`);
  };
  add(97, 122, -32);
  add(65, 90, 32);
  return parts.join('');
}
