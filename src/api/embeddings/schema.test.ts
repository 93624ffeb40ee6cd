import { describe, expect, it } from 'vitest';
import { apiError as error } from '../../../test/support/api-error.ts';
import { DEFAULT_LIMITS } from '../options.ts';
import { embeddingsParser } from './schema.ts';

const parse = embeddingsParser({ ...DEFAULT_LIMITS, maxInputs: 3, maxInputChars: 10 });

describe('embeddings request parsing', () => {
  it('takes a string or an array of strings; float is the default format', () => {
    expect(parse({ model: 'e', input: 'hi' })).toEqual({
      model: 'e',
      input: ['hi'],
      encodingFormat: 'float',
    });
    expect(parse({ model: 'e', input: ['a', 'b'], encoding_format: 'base64', user: 'u' })).toEqual({
      model: 'e',
      input: ['a', 'b'],
      encodingFormat: 'base64',
    });
  });

  it.each([
    [{ input: undefined }, 'input', /Missing required parameter/],
    [{ input: '' }, 'input', /at least 1 character/],
    [{ input: [] }, 'input', /at least 1 item/],
    [{ input: ['a', 'b', 'c', 'd'] }, 'input', /at most 3 items/],
    [{ input: 'x'.repeat(11) }, 'input', /at most 10 characters/],
    [{ input: ['ok', 'x'.repeat(11)] }, 'input[1]', /at most 10 characters/],
    [{ input: ['ok', 5] }, 'input', /Token-array input is not supported/],
    [{ input: [1, 2, 3] }, 'input', /Token-array input is not supported/],
    [{ input: {} }, 'input', /expected a string or an array/],
    [{ encoding_format: 'binary' }, 'encoding_format', /expected "float", "base64"/],
    [{ dimensions: 8 }, 'dimensions', /not supported/],
  ])('refuses %j naming %s', (body, param, message) => {
    const e = error(() => parse({ model: 'e', input: 'hi', ...body }));
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
  });
});
