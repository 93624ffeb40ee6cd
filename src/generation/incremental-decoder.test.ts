import { AutoTokenizer } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../../test/support/lantern.ts';
import { IncrementalDecoder } from './incremental-decoder.ts';

const texts = [
  'Hello, world! How are you today?',
  '  leading spaces and\nnew lines\n\n',
  'Bonjour ! Ça va très bien, merci.',
  'こんにちは！元気です。',
  '👋 Hello from your device! 🌍 🦓🦓',
  'tabs\tand\tnumbers 12345 67.89',
];

const tokenizers = [
  { name: 'byte-level BPE (tiny-chat)', folder: `${BUNDLED_MODELS}/tiny-chat`, run: true },
  { name: 'SentencePiece with byte fallback (stories260K)', folder: STORIES_260K, run: HAS_STORIES_260K },
];

describe.each(tokenizers)('IncrementalDecoder on $name', ({ folder, run }) => {
  it.skipIf(!run).each(texts)('emits exactly the decoded text of %j, never half a character', async (text) => {
    const tokenizer = await AutoTokenizer.from_pretrained(folder);
    const decode = (ids: number[]) => (ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : '');
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const decoder = new IncrementalDecoder(decode);
    const pieces = ids.map((id) => decoder.push(id));
    pieces.push(decoder.flush());
    expect(pieces.join('')).toBe(decode(ids));
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
  });
});

describe('IncrementalDecoder', () => {
  it('holds back an incomplete character and releases it at flush as U+FFFD', () => {
    // A decoder over raw UTF-8 bytes: each "token" is one byte.
    const decode = (ids: number[]) => new TextDecoder().decode(Uint8Array.from(ids));
    const decoder = new IncrementalDecoder(decode);
    const wave = [...new TextEncoder().encode('a👋')];
    expect(wave.map((b) => decoder.push(b))).toEqual(['a', '', '', '', '👋']);
    decoder.push(0xf0);
    expect(decoder.flush()).toBe('\uFFFD');
  });
});
