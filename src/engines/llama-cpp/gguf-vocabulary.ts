import { tokenBytes, tokensText, type Vocabulary, type VocabType } from '../../grammar/token-bytes.ts';

/** The tokenizer part of a GGUF's metadata (`tokenizer.ggml.*`), as llama.cpp's converters write it. */
export interface GgufTokenizer {
  /** `gpt2` (byte-level BPE), `llama` (SentencePiece with byte fallback), `bert` (WordPiece), … */
  model: string;
  tokens: readonly string[];
  /** Per token: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. */
  token_type?: readonly number[];
  /** SentencePiece: whether a space is put before the text (default true). */
  add_space_prefix?: boolean;
}

/** llama.cpp's token types that are never part of generated text. */
const CONTROL = 3;

/**
 * The vocabulary of a GGUF as a grammar engine reads it: its token strings, how they encode bytes (GPT-2's byte
 * characters for `gpt2`, `▁` and `<0xNN>` for `llama`), its control tokens, and each token's exact bytes. User-defined
 * tokens (a template's `<tool_call>`) are text as written.
 */
export function ggufVocabulary(tokenizer: GgufTokenizer): Vocabulary {
  const type: VocabType =
    tokenizer.model === 'gpt2' ? 'byte_level' : tokenizer.model === 'llama' ? 'byte_fallback' : 'raw';
  const strings = [...tokenizer.tokens];
  const types = tokenizer.token_type ?? [];
  const special = new Set<number>();
  const encoder = new TextEncoder();
  const bytes = strings.map((text, id) => {
    if (types[id] === CONTROL) special.add(id);
    return types[id] === CONTROL || types[id] === 4 ? encoder.encode(text) : tokenBytes(text, type);
  });
  const prependSpace = type === 'byte_fallback' && (tokenizer.add_space_prefix ?? true);
  return { strings, type, prependSpace, special, bytes };
}

/**
 * Decoding as llama.cpp does it (`llama_detokenize`), from a vocabulary's bytes: the text of the tokens that are not
 * control tokens, with a SentencePiece tokenizer's leading space taken off; and one token's text, control tokens
 * written out (its leading space taken off too, as llama.cpp does). For a runtime that decodes only asynchronously (wllama), where generation decodes as it goes.
 */
export function vocabularyDecoder(vocabulary: Vocabulary) {
  const text = (ids: readonly number[]) => {
    const text = tokensText(vocabulary, ids);
    return vocabulary.prependSpace && text.startsWith(' ') ? text.slice(1) : text;
  };
  return {
    decode: (ids: number[]) => text(ids.filter((id) => !vocabulary.special.has(id))),
    tokenString: (token: number) => text([token]),
  };
}
