import type { OutputConstraint } from '../../engine/index.ts';
import { HERMES, type ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { BoundedCache } from './bounded-cache.ts';
import { constraintGrammar, grammarKey } from './output-constraint.ts';
import type { Vocabulary } from './token-bytes.ts';
import { Utf8Table, type Utf8State } from './utf8-guard.ts';
import {
  fillNextTokenBitmask,
  loadXGrammar,
  type XCompiledGrammar,
  type XGrammarCompiler,
  type XMatcher,
} from './xgrammar.ts';

/** Compiled grammars kept per model: compiling is the expensive step, matching a compiled grammar is cheap. */
const COMPILED_PER_MODEL = 32;

/**
 * Grammars compiled against one model's vocabulary, and a matcher per choice. For engines whose logits Lantern sees
 * (transformers.js); web-llm compiles the same grammar text itself.
 */
export class GrammarCompiler {
  readonly #compiler: XGrammarCompiler;
  readonly #vocabulary: Vocabulary;
  readonly #stops: ReadonlySet<number>;
  readonly #utf8: Utf8Table;
  readonly #compiled = new BoundedCache<string, Promise<XCompiledGrammar>>(COMPILED_PER_MODEL, (grammar) =>
    grammar.then((g) => g.dispose()).catch(() => {}),
  );

  private constructor(compiler: XGrammarCompiler, vocabulary: Vocabulary, stops: ReadonlySet<number>) {
    this.#compiler = compiler;
    this.#vocabulary = vocabulary;
    this.#stops = stops;
    this.#utf8 = new Utf8Table(vocabulary.bytes, vocabulary.special, stops);
  }

  /** For a vocabulary and the tokens that end a reply (allowed once the grammar is complete, never before). */
  static async create(vocabulary: Vocabulary, stops: ReadonlySet<number>): Promise<GrammarCompiler> {
    const xg = await loadXGrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(
      vocabulary.strings,
      vocabulary.type,
      vocabulary.prependSpace,
      vocabulary.strings.length,
      [...stops],
    );
    return new GrammarCompiler(await xg.GrammarCompiler.createGrammarCompiler(info, false), vocabulary, stops);
  }

  /**
   * One matcher per choice for `constraint`, its calls (if any) in the model's `syntax`, compiling its grammar on first
   * use (then cached).
   */
  async matchers(constraint: OutputConstraint, count: number, syntax: ToolCallSyntax = HERMES): Promise<GrammarMask[]> {
    const key = grammarKey(constraint, syntax);
    const compiled = this.#compiled.getOrCreate(key, async () => {
      const spec = await constraintGrammar(constraint, syntax);
      return 'ebnf' in spec
        ? this.#compiler.compileGrammar(spec.ebnf)
        : this.#compiler.compileStructuralTag(spec.structuralTag);
    });
    compiled.catch(() => this.#compiled.delete(key));
    const grammar = await compiled;
    const xg = await loadXGrammar();
    const matchers = await Promise.all(
      Array.from({ length: count }, () => xg.GrammarMatcher.createGrammarMatcher(grammar)),
    );
    return matchers.map((m) => new GrammarMask(m, this.#vocabulary, this.#stops, this.#utf8));
  }
}

/** One choice's grammar state: masks each step's logits and follows the tokens generated. */
export class GrammarMask {
  readonly #matcher: XMatcher;
  readonly #vocabulary: Vocabulary;
  readonly #stops: ReadonlySet<number>;
  readonly #utf8: Utf8Table;
  readonly #bits: Int32Array;
  #done = false;
  /** Where the output's UTF-8 stands: mid-character after a token that ended inside one. */
  #utf8State: Utf8State = 0;

  constructor(matcher: XMatcher, vocabulary: Vocabulary, stops: ReadonlySet<number>, utf8: Utf8Table) {
    this.#matcher = matcher;
    this.#vocabulary = vocabulary;
    this.#stops = stops;
    this.#utf8 = utf8;
    this.#bits = new Int32Array(Math.ceil(vocabulary.strings.length / 32));
  }

  /**
   * Sets every token the grammar does not allow next to -Infinity, in place. Special tokens are never allowed
   * inside the constrained text, whatever the grammar engine thinks of their spelling; a reply-ending token only
   * once the grammar is complete; and no token that would make the text invalid UTF-8 (see utf8-guard.ts).
   * Returns false when nothing is allowed (a dead end the grammar should never reach).
   */
  apply(logits: Float32Array): boolean {
    const size = Math.min(this.#vocabulary.strings.length, logits.length);
    const bits = this.#bits;
    fillNextTokenBitmask(this.#matcher, this.#vocabulary.strings.length, bits);
    const state = this.#utf8State;
    const fits = this.#utf8.fitsAfter(state);
    let allowed = 0;
    for (let t = 0; t < size; t++) {
      if ((bits[t >>> 5]! & (1 << (t & 31))) !== 0 && fits(t)) allowed++;
      else logits[t] = -Infinity;
    }
    logits.fill(-Infinity, size);
    return allowed > 0;
  }

  /** Follows a generated token; false when the grammar does not accept it (then the choice cannot be valid). */
  accept(token: number): boolean {
    if (this.#done) return true;
    const accepted = this.#matcher.handle.AcceptToken(token, false);
    if (this.#stops.has(token)) this.#done = true;
    else this.#utf8State = this.#utf8.next(this.#utf8State, token);
    return accepted && this.#utf8State !== -1;
  }

  dispose(): void {
    this.#matcher.dispose();
  }
}
