'use strict';
// fast-xml-parser 3.x as s3rver 3.7.1 calls it, without 3.21.1's parser (GHSA-x3cc-x39p-42qx):
// fast-xml-parser 5 reads the document (validation, tags, attributes, text, CDATA) and the 3.x
// rules that shape the result (trim, tagValueProcessor, number parsing with strnum 1.x, repeated
// tags as arrays, '@_' attributes, '#text') are replayed over its ordered tree, so s3rver's bodies
// and configs come out as they did. A tag named __proto__ is refused (3.21.1 made it the parsed
// object's prototype): validate() reports it and parse() throws.
const { XMLParser, XMLValidator } = require('fast-xml-parser-5');
const toNumber = require('strnum');
const buildOptions = require('./build-options');

const defaultOptions = {
  attributeNamePrefix: '@_',
  attrNodeName: false,
  textNodeName: '#text',
  ignoreAttributes: true,
  ignoreNameSpace: false,
  allowBooleanAttributes: false,
  parseNodeValue: true,
  parseAttributeValue: false,
  arrayMode: false,
  trimValues: true,
  cdataTagName: false,
  cdataPositionChar: '\\c',
  numParseOptions: { hex: true, leadingZeros: true },
  tagValueProcessor: (a) => a,
  attrValueProcessor: (a) => a,
  stopNodes: [],
  alwaysCreateTextNode: false,
};
const props = Object.keys(defaultOptions).concat('parseTrueNumberOnly');

// Reads everything raw: the 3.x rules below do all trimming, decoding and value parsing.
const RAW_PREFIX = '@_';
const reader = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: RAW_PREFIX,
  allowBooleanAttributes: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: false,
  htmlEntities: false,
  cdataPropName: '#cdata',
  textNodeName: '#text',
  commentPropName: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  removeNSPrefix: false,
  strictReservedNames: false,
  onDangerousProperty: (name) => name,
});

const FORBIDDEN_NAME = '__proto__';

function refuse(name) {
  return new Error(`Tag '${name}' is not allowed: it would replace the parsed object's prototype.`);
}

// Fast-xml-parser 5 renames a __proto__ tag to '#__proto__' in its ordered tree.
function tagNameOf(entry) {
  for (const key of Object.keys(entry)) {
    if (key === ':@') continue;
    if (key === FORBIDDEN_NAME || key === '#' + FORBIDDEN_NAME) throw refuse(FORBIDDEN_NAME);
    return key;
  }
  return undefined;
}

function XmlNode(tagname, parent, val) {
  this.tagname = tagname;
  this.parent = parent;
  this.child = {};
  this.attrsMap = {};
  this.val = val;
}
XmlNode.prototype.addChild = function addChild(child) {
  if (child.tagname === FORBIDDEN_NAME) throw refuse(FORBIDDEN_NAME);
  if (Array.isArray(this.child[child.tagname])) this.child[child.tagname].push(child);
  else this.child[child.tagname] = [child];
};

const isExist = (v) => typeof v !== 'undefined';
const getValue = (v) => (isExist(v) ? v : '');

function parseValue(val, shouldParse, numParseOptions) {
  if (shouldParse && typeof val === 'string') {
    const trimmed = val.trim();
    if (trimmed === 'true') return true;
    if (trimmed === 'false') return false;
    return toNumber(val, numParseOptions);
  }
  return isExist(val) ? val : '';
}

// 3.x: trim, then tagValueProcessor(value, tagName), then number/boolean parsing.
function processTagValue(tagName, val, options) {
  if (val) {
    if (options.trimValues) val = val.trim();
    val = options.tagValueProcessor(val, tagName);
    val = parseValue(val, options.parseNodeValue, options.numParseOptions);
  }
  return val;
}

function resolveNameSpace(name, options) {
  if (!options.ignoreNameSpace) return name;
  const parts = name.split(':');
  if (parts[0] === 'xmlns') return '';
  return parts.length === 2 ? parts[1] : name;
}

// 3.x built attributes from the raw tag text, where line breaks had become spaces.
function buildAttributesMap(rawAttrs, options) {
  if (options.ignoreAttributes || !rawAttrs) return undefined;
  const attrs = {};
  for (const rawName of Object.keys(rawAttrs)) {
    const attrName = resolveNameSpace(rawName.slice(RAW_PREFIX.length), options);
    if (!attrName.length) continue;
    const raw = rawAttrs[rawName];
    const key = options.attributeNamePrefix + attrName;
    if (key === FORBIDDEN_NAME) throw refuse(FORBIDDEN_NAME);
    if (typeof raw === 'string') {
      let value = raw.replace(/\r?\n/g, ' ');
      if (options.trimValues) value = value.trim();
      value = options.attrValueProcessor(value, attrName);
      attrs[key] = parseValue(value, options.parseAttributeValue, options.numParseOptions);
    } else if (options.allowBooleanAttributes) {
      attrs[key] = true;
    }
  }
  if (!Object.keys(attrs).length) return undefined;
  if (options.attrNodeName) return { [options.attrNodeName]: attrs };
  return attrs;
}

// The same steps, in the same order, as 3.21.1's getTraversalObj over its character loop: text
// between two tags is one piece (comments do not split it), flushed into the open node's value.
function build(entries, currentNode, options) {
  let textData = '';
  for (const entry of entries) {
    const name = tagNameOf(entry);
    if (name === undefined) continue;
    if (name === '#text') {
      textData += entry['#text'];
    } else if (name === '#cdata') {
      const cdata = entry['#cdata'].map((part) => part['#text']).join('');
      if (textData) {
        currentNode.val = getValue(currentNode.val) + '' + processTagValue(currentNode.tagname, textData, options);
        textData = '';
      }
      if (options.cdataTagName) {
        const cdataNode = new XmlNode(options.cdataTagName, currentNode, cdata);
        currentNode.addChild(cdataNode);
        currentNode.val = getValue(currentNode.val) + options.cdataPositionChar;
        if (cdata) cdataNode.val = cdata;
      } else {
        currentNode.val = (currentNode.val || '') + (cdata || '');
      }
    } else {
      let tagName = name;
      if (options.ignoreNameSpace && tagName.includes(':')) tagName = tagName.slice(tagName.indexOf(':') + 1);
      if (textData && currentNode.tagname !== '!xml') {
        currentNode.val = getValue(currentNode.val) + '' + processTagValue(currentNode.tagname, textData, options);
      }
      textData = '';
      const childNode = new XmlNode(tagName, currentNode);
      const attrsMap = buildAttributesMap(entry[':@'], options);
      if (entry[':@'] !== undefined) childNode.attrsMap = attrsMap;
      currentNode.addChild(childNode);
      build(entry[name], childNode, options);
    }
  }
  if (currentNode.tagname === '!xml') return;
  // The closing tag: what the node held before it is its last text piece.
  if (currentNode.val) {
    currentNode.val = getValue(currentNode.val) + '' + processTagValue(currentNode.tagname, textData, options);
  } else {
    currentNode.val = processTagValue(currentNode.tagname, textData, options);
  }
}

function getTraversalObj(xmlData, givenOptions) {
  xmlData = xmlData.replace(/\r\n?/g, '\n');
  const options = buildOptions(givenOptions, defaultOptions, props);
  if (options.stopNodes && options.stopNodes.length) throw new Error('stopNodes is not supported by this fast-xml-parser 3.x compatibility package');
  const root = new XmlNode('!xml');
  build(reader.parse(xmlData), root, options);
  return root;
}

function isTagNameInArrayMode(tagName, arrayMode, parentTagName) {
  if (arrayMode === false) return false;
  if (arrayMode instanceof RegExp) return arrayMode.test(tagName);
  if (typeof arrayMode === 'function') return !!arrayMode(tagName, parentTagName);
  return arrayMode === 'strict';
}

function merge(target, source, arrayMode) {
  if (!source) return;
  for (const key of Object.keys(source)) target[key] = arrayMode === 'strict' ? [source[key]] : source[key];
}

const isEmptyObject = (obj) => Object.keys(obj).length === 0;

function convertToJson(node, options, parentTagName) {
  const jObj = {};
  if (!options.alwaysCreateTextNode && (!node.child || isEmptyObject(node.child)) && (!node.attrsMap || isEmptyObject(node.attrsMap))) {
    return isExist(node.val) ? node.val : '';
  }
  if (isExist(node.val) && !(typeof node.val === 'string' && (node.val === '' || node.val === options.cdataPositionChar))) {
    const asArray = isTagNameInArrayMode(node.tagname, options.arrayMode, parentTagName);
    jObj[options.textNodeName] = asArray ? [node.val] : node.val;
  }
  merge(jObj, node.attrsMap, options.arrayMode);
  for (const tagName of Object.keys(node.child)) {
    const nodes = node.child[tagName];
    if (nodes && nodes.length > 1) {
      jObj[tagName] = nodes.map((child) => convertToJson(child, options, tagName));
    } else {
      const result = convertToJson(nodes[0], options, tagName);
      const asArray = (options.arrayMode === true && typeof result === 'object') || isTagNameInArrayMode(tagName, options.arrayMode, parentTagName);
      jObj[tagName] = asArray ? [result] : result;
    }
  }
  return jObj;
}

/**
 * What follows the root element, if anything but white space, comments and processing
 * instructions: fast-xml-parser 5's validator lets an element or text through after a
 * self-closing root (`<a/><b/>`), which the README says this layer refuses (issue 27, finding 6).
 * Runs after the validator, so the tags are well formed; only their nesting is followed here.
 */
function afterRoot(xml) {
  let depth = 0;
  let seenRoot = false;
  for (let i = 0; i < xml.length; ) {
    if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i + 4);
      i = end < 0 ? xml.length : end + 3;
    } else if (xml.startsWith('<?', i)) {
      const end = xml.indexOf('?>', i + 2);
      i = end < 0 ? xml.length : end + 2;
    } else if (xml.startsWith('<![CDATA[', i)) {
      if (depth === 0) return seenRoot ? 'CDATA after the root element' : undefined;
      const end = xml.indexOf(']]>', i + 9);
      i = end < 0 ? xml.length : end + 3;
    } else if (xml.startsWith('<!', i)) {
      if (seenRoot) return 'a declaration after the root element';
      const subset = xml.indexOf('[', i);
      const close = xml.indexOf('>', i);
      const end = subset >= 0 && subset < close ? xml.indexOf(']>', subset) + 1 : close;
      i = end <= 0 ? xml.length : end + 1;
    } else if (xml[i] === '<') {
      if (depth === 0 && seenRoot) return 'an element after the root element';
      let j = i + 1;
      for (let quote = null; j < xml.length; j++) {
        const c = xml[j];
        if (quote) {
          if (c === quote) quote = null;
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '>') break;
      }
      if (xml[i + 1] === '/') depth--;
      else if (xml[j - 1] !== '/') depth++;
      seenRoot = true;
      i = j + 1;
    } else {
      if (depth === 0 && seenRoot && !/\s/.test(xml[i])) return 'text after the root element';
      i++;
    }
  }
  return undefined;
}

function validate(xmlData, validationOptions) {
  const result = XMLValidator.validate(xmlData, validationOptions);
  if (result !== true) return result;
  const trailing = afterRoot(xmlData);
  if (trailing) return { err: { code: 'InvalidXml', msg: `Extra content at the end of the document: ${trailing}`, line: 1, col: 1 } };
  try {
    getTraversalObj(xmlData);
  } catch (error) {
    return { err: { code: 'InvalidTag', msg: error.message, line: 1, col: 1 } };
  }
  return true;
}

function parse(xmlData, givenOptions = {}, validationOption) {
  if (validationOption) {
    const result = validate(xmlData, validationOption === true ? {} : validationOption);
    if (result !== true) throw Error(result.err.msg);
  }
  if (givenOptions.parseTrueNumberOnly && givenOptions.parseNodeValue !== false && !givenOptions.numParseOptions) {
    givenOptions.numParseOptions = { leadingZeros: false };
  }
  const options = buildOptions(givenOptions, defaultOptions, props);
  return convertToJson(getTraversalObj(xmlData, options), options);
}

module.exports = { parse, validate, getTraversalObj, convertToJson, j2xParser: require('./json2xml-v3') };
