import type { PreTrainedTokenizer } from '@huggingface/transformers';

/** What of transformers.js' inner tokenizer (@huggingface/tokenizers' Tokenizer) this reads. */
interface InnerTokenizer {
  pre_tokenizer: ((text: string, options?: unknown) => string[]) | null;
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}

/**
 * The ids of a rendered prompt whose supplied strings had their control tokens' spellings hidden (see
 * ControlSpellings): the tokenizer splits it at the spellings the template wrote, as ever, and the stand-ins come back
 * as their spellings only where the text between those is pre-tokenized, past every stage that looks for added tokens.
 * So a supplied `<|im_end|>` is tokenized as the plain text it is, together with its neighbours, exactly as it would
 * be were it not a token of the vocabulary.
 *
 * transformers.js (4.x, through @huggingface/tokenizers 0.2) has no option for this (`split_special_tokens` is read
 * nowhere): its inner tokenizer is used through a view whose pre-tokenizer reveals, leaving the tokenizer itself as it
 * is for every other caller.
 */
export function encodeRevealed(
  tokenizer: PreTrainedTokenizer,
  text: string,
  reveal: (text: string) => string,
): number[] {
  const inner = (tokenizer as unknown as { _tokenizer: InnerTokenizer })._tokenizer;
  const preTokenize = inner.pre_tokenizer;
  // With no pre-tokenizer the model reads each section whole, as this one-piece split gives it.
  const revealing = (section: string, options?: unknown) =>
    preTokenize ? preTokenize(reveal(section), options) : [reveal(section)];
  const view = Object.create(inner, { pre_tokenizer: { value: revealing } }) as InnerTokenizer;
  return view.encode(text, { add_special_tokens: false }).ids;
}
