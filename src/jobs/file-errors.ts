import { ERROR_CODES } from '../shared/errors.js';

/**
 * Codes that describe the caller's file (its bytes, its CSV, its size), never a fault of ours: a
 * job that fails with one failed for good, and an upload refused with one is the caller's 422.
 */
export const FILE_ERROR_CODES: ReadonlySet<string> = new Set([
  ERROR_CODES.invalidUtf8,
  ERROR_CODES.binaryFile,
  ERROR_CODES.compressedFile,
  ERROR_CODES.emptyFile,
  ERROR_CODES.noRows,
  ERROR_CODES.noKeyColumn,
  ERROR_CODES.columnNotFound,
  ERROR_CODES.ambiguousColumn,
  ERROR_CODES.lineTooLong,
  ERROR_CODES.malformedCsv,
  ERROR_CODES.utf16WithoutBom,
  ERROR_CODES.invalidUtf16,
  ERROR_CODES.ambiguousDelimiter,
  ERROR_CODES.tooManyRows,
  ERROR_CODES.tooManyColumns,
]);
