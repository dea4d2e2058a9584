import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const xmlParser = require('fast-xml-parser') as { validate(xml: string): true | { err: { code: string; msg: string } } };

/**
 * Issue 27, finding 6: fast-xml-parser 5's validator let an element or text through after a
 * self-closing root, so the compatibility layer s3rver runs accepted `<a/><b/>` although the README
 * says it refuses anything after the root element.
 */
describe('the fast-xml-parser layer s3rver runs', () => {
  it('refuses an element or text after a self-closing root', () => {
    for (const xml of ['<a/><b/>', '<a/>\n<b/>', '<?xml version="1.0"?><Delete/><Object/>', '<a/>text', '<a/><![CDATA[x]]>']) {
      const result = xmlParser.validate(xml);
      expect(result, xml).not.toBe(true);
    }
  });

  it('still takes what may follow the root: white space, comments, processing instructions', () => {
    for (const xml of ['<a/>', '<a/>\n', '<a/><!-- note -->', '<a/><?pi x?>', '<a x="1/>"/>', '<!DOCTYPE a [<!ENTITY e "v">]><a>&e;</a>', '<a><![CDATA[<b/>]]></a>']) {
      expect(xmlParser.validate(xml), xml).toBe(true);
    }
  });
});
