'use strict';
// fast-xml-parser 3.21.1's buildOptions: only the listed props, each from the given options when
// defined, else from the defaults; no options at all returns the defaults object itself.
module.exports = function buildOptions(options, defaultOptions, props) {
  if (!options) return defaultOptions;
  const built = {};
  for (const prop of props) built[prop] = options[prop] !== undefined ? options[prop] : defaultOptions[prop];
  return built;
};
