/**
 * `format`s as Lantern generates them. In JSON Schema a format is an annotation that validators may check: Lantern
 * generates every format that validators check (ajv-formats, @cfworker/json-schema) as a plain, valid form of it — a
 * narrower pattern than the format allows, so that any validator accepts it — and ignores the others, as validators
 * do. Numeric formats (OpenAPI's `int32`, `int64`, `float`, `double`) bound numbers instead.
 */

/** Day 01–28 (every month has them), hours 00–23, minutes and seconds 00–59, a time zone always given. */
const DATE = String.raw`(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])`;
const TIME = String.raw`([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)`;
const LABEL = '[a-z0-9]{1,16}';
const HOST = `${LABEL}(\\.${LABEL}){0,3}`;
const URI = `https?://${HOST}(/[A-Za-z0-9_-]{1,16}){0,4}`;
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';

/** The value patterns of the string formats validators check. */
export const STRING_FORMATS: Readonly<Record<string, string>> = {
  'date-time': `${DATE}T${TIME}`,
  'iso-date-time': `${DATE}T${TIME}`,
  date: DATE,
  time: TIME,
  'iso-time': TIME,
  duration: String.raw`P(\d{1,3}D|T\d{1,3}[HMS])`,
  email: `${LABEL}(\\.${LABEL}){0,2}@${LABEL}(\\.${LABEL}){0,2}\\.[a-z]{2,6}`,
  'idn-email': `${LABEL}(\\.${LABEL}){0,2}@${LABEL}(\\.${LABEL}){0,2}\\.[a-z]{2,6}`,
  hostname: HOST,
  'idn-hostname': HOST,
  ipv4: `(${OCTET}\\.){3}${OCTET}`,
  ipv6: '[0-9a-f]{1,4}(:[0-9a-f]{1,4}){7}',
  uri: URI,
  url: URI,
  iri: URI,
  'uri-reference': URI,
  'iri-reference': URI,
  'uri-template': URI,
  uuid: '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
  guid: '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
  'json-pointer': '(/[a-z0-9_]{1,16}){0,4}',
  'relative-json-pointer': '[0-9](/[a-z0-9_]{1,16}){0,3}',
  regex: '[a-z0-9]{1,16}',
  byte: '([A-Za-z0-9+/]{4}){0,16}',
};

/** Numeric formats as bounds (ajv-formats checks `int32` and `int64`; `int64` past 2^53 is not exact in JSON). */
export const NUMBER_FORMATS: Readonly<Record<string, { integer: boolean; minimum?: number; maximum?: number }>> = {
  int8: { integer: true, minimum: -128, maximum: 127 },
  uint8: { integer: true, minimum: 0, maximum: 255 },
  int16: { integer: true, minimum: -32768, maximum: 32767 },
  uint16: { integer: true, minimum: 0, maximum: 65535 },
  int32: { integer: true, minimum: -(2 ** 31), maximum: 2 ** 31 - 1 },
  uint32: { integer: true, minimum: 0, maximum: 2 ** 32 - 1 },
  int64: { integer: true, minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
  uint64: { integer: true, minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  float: { integer: false },
  double: { integer: false },
};
