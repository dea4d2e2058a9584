import { DELIMITER_HELP, ENCODING_HELP, parseDelimiter, parseEncoding } from '../../jobs/input-options.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { JobOptions } from '../../storage/job-records.js';
import { httpError } from '../errors.js';

/** A header name is a cell of the header row; this bounds what an error message echoes and a job stores. */
const MAX_COLUMN_NAME = 200;

export interface InputOptionFields {
  delimiter?: string | undefined;
  encoding?: string | undefined;
  country_column?: string | undefined;
  excel?: string | boolean | undefined;
}

/**
 * The API fields that say how to read the input and write the results, checked (422 with a stable
 * code) and turned into job options. Empty strings count as not given, as an HTML form sends them.
 */
export function inputOptionsOf(fields: InputOptionFields): Pick<JobOptions, 'delimiter' | 'encoding' | 'countryColumn' | 'excel'> {
  const delimiter = fields.delimiter ? parseDelimiter(fields.delimiter) : undefined;
  if (fields.delimiter && delimiter === undefined) {
    throw httpError(422, ERROR_CODES.invalidDelimiter, `delimiter must be ${DELIMITER_HELP}, got "${fields.delimiter.slice(0, 40)}"`);
  }
  const encoding = fields.encoding ? parseEncoding(fields.encoding) : undefined;
  if (fields.encoding && encoding === undefined) {
    throw httpError(422, ERROR_CODES.unknownEncoding, `encoding must be one of ${ENCODING_HELP}, got "${fields.encoding.slice(0, 40)}"`);
  }
  const countryColumn = fields.country_column?.trim();
  if (countryColumn !== undefined && countryColumn.length > MAX_COLUMN_NAME) {
    throw httpError(422, ERROR_CODES.invalidRequest, `country_column must be at most ${MAX_COLUMN_NAME} characters`);
  }
  const excel = booleanField(fields.excel);
  if (excel === undefined) throw httpError(422, ERROR_CODES.invalidRequest, 'excel must be true or false');
  return {
    ...(delimiter === undefined ? {} : { delimiter }),
    ...(encoding === undefined ? {} : { encoding }),
    ...(countryColumn ? { countryColumn } : {}),
    ...(excel ? { excel: true } : {}),
  };
}

/** A multipart field is text, a JSON field a boolean; anything else is a mistake worth a 422. */
function booleanField(value: string | boolean | undefined): boolean | undefined {
  if (value === undefined || value === '' || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  return undefined;
}
