import { describe, expect, it } from 'vitest';
import { firstNameFromEmail } from './first-name.js';

describe('firstNameFromEmail', () => {
  const cases: [email: string, name: string | undefined][] = [
    ['john@example.com', 'john'],
    ['john.smith@example.com', 'john'],
    ['John.Smith@Example.com', 'john'],
    ['john_smith@example.com', 'john'],
    ['mary-jane.doe@example.com', 'mary'],
    ['john.smith+newsletter@example.com', 'john'],
    ['anna+tag.with.dots@example.com', 'anna'],
    ['john1985@example.com', 'john'],
    ['42.anna@example.com', 'anna'],
    ['_maria_@example.com', 'maria'],
    ['jo@example.com', 'jo'],
    ['josé.garcía@example.com', 'jose'],
    ["o'brien.kate@example.com", undefined],
    ['j.smith@example.com', undefined],
    ['j@example.com', undefined],
    ['j2smith@example.com', undefined],
    ['de.silva@example.com', undefined],
    ['van.dijk@example.com', undefined],
    ['dev@example.com', undefined],
    ['12345@example.com', undefined],
    ['+tag@example.com', undefined],
    ['@example.com', undefined],
    ['', undefined],
    ['info@example.com', 'info'],
    ['johnsmith@example.com', 'johnsmith'],
    ['no-at-sign', 'no'],
  ];
  it.each(cases)('%j -> %j', (email, name) => {
    expect(firstNameFromEmail(email)).toBe(name);
  });
});
