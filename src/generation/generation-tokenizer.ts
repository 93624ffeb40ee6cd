import type { OutputConstraint } from '../engine-interface/index.ts';
import { GrammarCompiler } from '../grammar/grammar-mask.ts';
import type { Vocabulary } from '../grammar/token-bytes.ts';
import type { ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import type { TokenText } from './logprobs.ts';

/** One choice's grammar state as generation uses it (a GrammarMask): masks logits, follows tokens, forces text. */
export interface ChoiceGrammar {
  /** Sets every token the grammar does not allow next to -Infinity; false when none is allowed. */
  apply(logits: Float32Array): boolean;
  /** Follows a generated token; false when the grammar does not accept it. */
  accept(token: number): boolean;
  /** The text the grammar allows next and nothing else ('' when the model has a choice). */
  forcedText(): string;
  dispose(): void;
}

/** A model's grammars (a GrammarCompiler): one matcher per choice for a constraint. */
export interface ChoiceGrammars {
  matchers(
    constraint: OutputConstraint,
    count: number,
    syntax?: ToolCallSyntax,
    thinking?: boolean,
  ): Promise<ChoiceGrammar[]>;
}

/**
 * What token generation (`generateTokens`) needs of an engine whose logits Lantern sees: its tokenizer, its vocabulary
 * as a grammar engine reads it, and its grammars. An engine builds one with {@link generationTokenizer} from the few
 * things only it knows ({@link TokenizerBasics}).
 */
export interface GenerationTokenizer {
  /**
   * The ids of `text` as the tokenizer writes it, without special tokens (jump-forward retokenizes with it). Absent
   * where the tokenizer cannot encode within a step (wllama's tokenizes in its own worker): what needs it then goes
   * without (a thought's end tag spelled in text, a prediction's tokens, jump-forward).
   */
  readonly encode?: ((text: string) => number[]) | undefined;
  /** The text of generated ids, special tokens skipped ('' for none). */
  decode(ids: number[]): string;
  /** The vocabulary as a grammar engine reads it (token strings, their bytes, the special tokens). */
  vocabulary(): Vocabulary;
  /** How `logprobs` spells the model's tokens. */
  tokenText(): TokenText;
  /** The tokens that end a reply. */
  readonly eos: ReadonlySet<number>;
  /** The model's grammar compiler, for a constrained request. */
  grammars(): Promise<ChoiceGrammars>;
}

/** What an engine's tokenizer provides; the rest of a {@link GenerationTokenizer} is derived from it. */
export interface TokenizerBasics {
  /** The ids of `text`, without special tokens; absent where it cannot encode within a step (see GenerationTokenizer). */
  readonly encode?: ((text: string) => number[]) | undefined;
  /** The text of generated ids, special tokens skipped ('' for none). */
  decode(ids: number[]): string;
  /** One token's text alone, special tokens written out (what `logprobs[].token` says). */
  tokenString(token: number): string;
  /** Reads the vocabulary (called once, when first needed). */
  readVocabulary(): Vocabulary;
  /** The tokens that end a reply. */
  readonly eos: ReadonlySet<number>;
}

/**
 * A {@link GenerationTokenizer} over an engine's tokenizer: the vocabulary read on first use, the grammar compiler made
 * on the first constrained request (made again after a failure), `logprobs`' spelling made once.
 */
export function generationTokenizer(basics: TokenizerBasics): GenerationTokenizer {
  let vocabulary: Vocabulary | undefined;
  let grammars: Promise<GrammarCompiler> | undefined;
  let words: TokenText | undefined;
  const readVocabulary = () => (vocabulary ??= basics.readVocabulary());
  return {
    encode: basics.encode,
    decode: (ids) => basics.decode(ids),
    eos: basics.eos,
    vocabulary: readVocabulary,
    grammars() {
      if (!grammars) {
        grammars = GrammarCompiler.create(readVocabulary(), basics.eos);
        grammars.catch(() => (grammars = undefined));
      }
      return grammars;
    },
    tokenText() {
      if (!words) {
        const { bytes } = readVocabulary();
        words = {
          text: (token) => basics.tokenString(token),
          bytes: (token) => bytes[token] ?? new Uint8Array(),
        };
      }
      return words;
    },
  };
}
