/**
 * What a tokenizer's vocabulary looks like to a grammar engine: each token id's string as stored in the vocabulary,
 * how those strings encode bytes, and each token's exact bytes (for `logprobs[].bytes`, which must be exact even when
 * a token holds part of a UTF-8 character).
 */

/** The parts of a transformers.js tokenizer that are read here. */
export interface TokenizerLike {
  get_vocab(): Map<string, number> | Record<string, number>;
  _tokenizerJSON?: {
    decoder?: unknown;
    normalizer?: unknown;
    pre_tokenizer?: unknown;
    added_tokens?: { id: number; content: string; special?: boolean }[];
  };
}

/** How vocabulary strings encode bytes, in XGrammar's terms. */
export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

export interface Vocabulary {
  /** Token strings by id, as stored (GPT-2 byte characters, `▁`, `<0x0A>`). */
  strings: string[];
  type: VocabType;
  /** Whether the tokenizer puts a space before the text (SentencePiece's dummy prefix). */
  prependSpace: boolean;
  /** Ids of special tokens (added tokens marked special): never part of generated text. */
  special: Set<number>;
  /** The exact bytes of each token id. */
  bytes: Uint8Array[];
}

const encoder = new TextEncoder();

/**
 * The text of tokens' bytes one after another, special tokens' included, decoded as one stream (a character split
 * across tokens comes out whole).
 */
export function tokensText(vocabulary: Pick<Vocabulary, 'bytes'>, ids: readonly number[]): string {
  const decoder = new TextDecoder();
  return ids.map((id) => decoder.decode(vocabulary.bytes[id], { stream: true })).join('') + decoder.decode();
}

/** Reads the vocabulary of a transformers.js tokenizer. */
export function readVocabulary(tokenizer: TokenizerLike): Vocabulary {
  const vocab = tokenizer.get_vocab();
  const entries = vocab instanceof Map ? [...vocab] : Object.entries(vocab);
  const json = tokenizer._tokenizerJSON ?? {};
  const special = new Set<number>();
  const strings: string[] = [];
  for (const [token, id] of entries) strings[id] = token;
  for (const added of json.added_tokens ?? []) {
    strings[added.id] = added.content;
    if (added.special) special.add(added.id);
  }
  for (let id = 0; id < strings.length; id++) strings[id] ??= '';
  const type: VocabType = has(json.decoder, 'ByteLevel')
    ? 'byte_level'
    : has(json.decoder, 'ByteFallback')
      ? 'byte_fallback'
      : 'raw';
  const prependSpace =
    type === 'byte_fallback' && (has(json.normalizer, 'Prepend') || has(json.pre_tokenizer, 'Metaspace'));
  const bytes = strings.map((s, id) => (special.has(id) ? encoder.encode(s) : tokenBytes(s, type)));
  return { strings, type, prependSpace, special, bytes };
}

let byteLevelMap: Map<string, number> | undefined;

/** GPT-2's byte-to-character table, inverted: each printable stand-in character to the byte it stands for. */
function byteLevel(): Map<string, number> {
  if (byteLevelMap) return byteLevelMap;
  const map = new Map<string, number>();
  let extra = 0;
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
    map.set(String.fromCharCode(printable ? byte : 256 + extra++), byte);
  }
  return (byteLevelMap = map);
}

/** The exact bytes a vocabulary string stands for, as its vocabulary type encodes them. */
export function tokenBytes(token: string, type: VocabType): Uint8Array {
  if (type === 'byte_level') {
    const map = byteLevel();
    const out: number[] = [];
    for (const ch of token) {
      const byte = map.get(ch);
      if (byte === undefined) out.push(...encoder.encode(ch));
      else out.push(byte);
    }
    return Uint8Array.from(out);
  }
  if (type === 'byte_fallback') {
    const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
    if (fallback) return Uint8Array.of(parseInt(fallback[1]!, 16));
    return encoder.encode(token.replaceAll('\u2581', ' '));
  }
  return encoder.encode(token);
}

function has(component: unknown, type: string): boolean {
  if (Array.isArray(component)) return component.some((c) => has(c, type));
  if (component === null || typeof component !== 'object') return false;
  const record = component as Record<string, unknown>;
  return record.type === type || Object.values(record).some((v) => typeof v === 'object' && has(v, type));
}
