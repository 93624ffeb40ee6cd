import { readVocabulary, type TokenizerLike, type Vocabulary } from '../../grammar/token-bytes.ts';
import { WEB_LLM_MODEL_CACHE, webLLMFileUrl } from './web-llm-cache.ts';

/**
 * What Lantern reads of a web-llm model's tokenizer: the tokenizer.json web-llm downloaded into its `webllm/model`
 * cache when it loaded the model (`asyncLoadTokenizer`). web-llm keeps its tokenizer to itself (its pipeline is
 * private; its token table, `getTokenTableFromTokenizer`, is not exported), so Lantern reads the same file.
 */
export interface WebLLMTokenizer {
  /**
   * The text of the special tokens the tokenizer's post-processor puts before a text (Llama 3's `<|begin_of_text|>`):
   * what transformers.js adds to a raw prompt. Empty when it adds none (Qwen's, SmolLM2's).
   */
  readonly bosText: string;
  /** Every token's string and exact bytes. */
  readonly vocabulary: Vocabulary;
}

interface TokenizerJson {
  model?: { vocab?: Record<string, number> | [string, number][] };
  post_processor?: Processor | null;
  [key: string]: unknown;
}

interface Processor {
  type?: string;
  processors?: Processor[];
  single?: ({ SpecialToken?: { id: string } } | { Sequence?: unknown })[];
}

/** The model's tokenizer, from web-llm's cache; undefined when it is not there (a tokenizer.model, another cache). */
export async function readWebLLMTokenizer(
  modelId: string,
  storage: CacheStorage | undefined = globalThis.caches,
): Promise<WebLLMTokenizer | undefined> {
  if (!storage) return undefined;
  const cache = await storage.open(WEB_LLM_MODEL_CACHE);
  const response = await cache.match(webLLMFileUrl(modelId, 'tokenizer.json'));
  if (!response) return undefined;
  const json = (await response.json()) as TokenizerJson;
  const vocab = json.model?.vocab ?? {};
  const tokenizer: TokenizerLike = {
    // A BPE's vocabulary maps strings to ids; a Unigram's lists [string, score] pairs by id.
    get_vocab: () => (Array.isArray(vocab) ? Object.fromEntries(vocab.map(([piece], id) => [piece, id])) : vocab),
    _tokenizerJSON: json as TokenizerLike['_tokenizerJSON'],
  };
  let vocabulary: Vocabulary | undefined;
  return {
    bosText: prefixOf(json.post_processor),
    get vocabulary() {
      return (vocabulary ??= readVocabulary(tokenizer));
    },
  };
}

/** The special tokens a post-processor's template puts before the text (`TemplateProcessing`, maybe in a Sequence). */
function prefixOf(processor: Processor | null | undefined): string {
  if (!processor) return '';
  if (processor.type === 'Sequence') return (processor.processors ?? []).map(prefixOf).join('');
  if (processor.type !== 'TemplateProcessing') return '';
  let prefix = '';
  for (const piece of processor.single ?? []) {
    if (!('SpecialToken' in piece) || !piece.SpecialToken) break;
    prefix += piece.SpecialToken.id;
  }
  return prefix;
}
