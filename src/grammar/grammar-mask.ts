import { EngineError, type OutputConstraint } from '../engine-interface/index.ts';
import { HERMES, type ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { BoundedCache } from './bounded-cache.ts';
import { jsonParam, toolParam } from './constraint-check.ts';
import { constraintGrammar, grammarKey } from './output-constraint.ts';
import type { Vocabulary } from './token-bytes.ts';
import { Utf8Table, type Utf8State } from './utf8-guard.ts';
import {
  callXGrammar,
  fillNextTokenBitmask,
  loadXGrammar,
  xgrammarFailure,
  type XCompiledGrammar,
  type XGrammarCompiler,
  type XGrammarModule,
  type XMatcher,
} from './xgrammar.ts';

/** Compiled grammars kept per model: compiling is the expensive step, matching a compiled grammar is cheap. */
const COMPILED_PER_MODEL = 32;

/**
 * What a GrammarCompiler made from one XGrammar instance: the model's vocabulary as XGrammar holds it, a compiler, and
 * the grammars it compiled. Dropped, and made again from the fresh instance, once that instance has failed.
 */
interface Compilers {
  xg: XGrammarModule;
  compiler: XGrammarCompiler;
  compiled: BoundedCache<string, Promise<XCompiledGrammar>>;
}

/**
 * Grammars compiled against one model's vocabulary, and a matcher per choice. For engines whose logits Lantern sees
 * (transformers.js); web-llm compiles the same grammar text itself.
 *
 * Everything it holds of XGrammar comes from one instance of its WebAssembly, and is made again from a fresh one when
 * that instance fails (see loadXGrammar): a request whose grammar aborts XGrammar is answered 400 (naming its schema's
 * parameter), and the next request, from any key, compiles on the fresh instance. Matchers of requests in flight on
 * the failed instance stop with `unavailable` (retryable), never taking the process or the worker down.
 */
export class GrammarCompiler {
  readonly #vocabulary: Vocabulary;
  readonly #stops: ReadonlySet<number>;
  readonly #utf8: Utf8Table;
  /** The XGrammar module that {@link #compilers} were made from (set before they are). */
  #module: XGrammarModule | undefined;
  #compilers: Promise<Compilers>;
  /** The grammars XGrammar failed on, by key, and their 400. */
  readonly #refused = new Map<string, EngineError>();

  private constructor(vocabulary: Vocabulary, stops: ReadonlySet<number>, compilers: Compilers) {
    this.#vocabulary = vocabulary;
    this.#stops = stops;
    this.#utf8 = new Utf8Table(vocabulary.bytes, vocabulary.special, stops);
    this.#module = compilers.xg;
    this.#compilers = Promise.resolve(compilers);
  }

  /** For a vocabulary and the tokens that end a reply (allowed once the grammar is complete, never before). */
  static async create(vocabulary: Vocabulary, stops: ReadonlySet<number>): Promise<GrammarCompiler> {
    return new GrammarCompiler(vocabulary, stops, await makeCompilers(await loadXGrammar(), vocabulary, stops));
  }

  /**
   * One matcher per choice for `constraint`, its calls (if any) in the model's `syntax`, compiling its grammar on first
   * use (then cached). When XGrammar fails under it, a failure of its grammar is a 400 naming the constraint's
   * parameter; one of an instance that another request broke meanwhile is tried once more on the fresh instance.
   */
  async matchers(
    constraint: OutputConstraint,
    count: number,
    syntax: ToolCallSyntax = HERMES,
    thinking = false,
  ): Promise<GrammarMask[]> {
    const key = grammarKey(constraint, syntax, thinking);
    const refused = this.#refused.get(key);
    if (refused) throw new EngineError(refused.kind, refused.message, { param: refused.param, cause: refused.cause });
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#matchers(constraint, count, syntax, thinking);
      } catch (error) {
        if (attempt === 1 && xgrammarFailure(error)?.blame === 'module') continue;
        throw this.#remember(key, grammarError(error, constraint));
      }
    }
  }

  /** A 400 for a grammar XGrammar failed on, kept: the same grammar again would only break a fresh instance too. */
  #remember(key: string, error: unknown): unknown {
    if (error instanceof EngineError && error.kind === 'invalid_request' && xgrammarFailure(error)) {
      if (this.#refused.size >= COMPILED_PER_MODEL) this.#refused.delete(this.#refused.keys().next().value!);
      this.#refused.set(key, error);
    }
    return error;
  }

  async #matchers(
    constraint: OutputConstraint,
    count: number,
    syntax: ToolCallSyntax,
    thinking: boolean,
  ): Promise<GrammarMask[]> {
    const { xg, compiler, compiled } = await this.#current();
    const key = grammarKey(constraint, syntax, thinking);
    const grammar = compiled.getOrCreate(key, async () => {
      const spec = await constraintGrammar(constraint, syntax, { thinking });
      return 'ebnf' in spec ? compiler.compileGrammar(spec.ebnf) : compiler.compileStructuralTag(spec.structuralTag);
    });
    grammar.catch(() => compiled.delete(key));
    const matchers: XMatcher[] = [];
    try {
      for (let i = 0; i < count; i++) matchers.push(await xg.GrammarMatcher.createGrammarMatcher(await grammar));
    } catch (error) {
      matchers.forEach((m) => m.dispose());
      throw error;
    }
    return matchers.map((m) => new GrammarMask(m, this.#vocabulary, this.#stops, this.#utf8));
  }

  /** What this compiler holds of the current XGrammar instance: made again (and the old dropped) after a failure. */
  #current(): Promise<Compilers> {
    return loadXGrammar().then((xg) => {
      if (this.#module !== xg) {
        // The old ones are only dropped: their instance is never called again, and goes with them (embind registers no
        // finalizer for XGrammar's objects, so none runs on the failed instance later).
        this.#module = xg;
        this.#compilers = makeCompilers(xg, this.#vocabulary, this.#stops);
        this.#compilers.catch(() => {
          if (this.#module === xg) this.#module = undefined;
        });
      }
      return this.#compilers;
    });
  }
}

async function makeCompilers(xg: XGrammarModule, vocabulary: Vocabulary, stops: ReadonlySet<number>) {
  const info = await xg.TokenizerInfo.createTokenizerInfo(
    vocabulary.strings,
    vocabulary.type,
    vocabulary.prependSpace,
    vocabulary.strings.length,
    [...stops],
  );
  const compiled = new BoundedCache<string, Promise<XCompiledGrammar>>(COMPILED_PER_MODEL, (grammar) =>
    grammar.then((g) => g.dispose()).catch(() => {}),
  );
  return { xg, compiler: await xg.GrammarCompiler.createGrammarCompiler(info, false), compiled };
}

/**
 * The error of a constraint whose grammar XGrammar failed on: its own grammar (XGrammar aborted on it, or its stack
 * overflowed) is a 400 naming the schema's parameter, as no retry can help; an instance that had already failed is
 * `unavailable`, which a retry heals. Any other error is left as it is.
 */
function grammarError(error: unknown, constraint: OutputConstraint): unknown {
  const failure = xgrammarFailure(error);
  if (!failure || error instanceof EngineError) return error;
  if (failure.blame === 'module') return restarted(error);
  const what = constraint.type === 'json' ? 'This JSON schema' : 'The parameters of these functions';
  return new EngineError(
    'invalid_request',
    `${what} cannot be enforced: the grammar engine (XGrammar) failed on its grammar ` +
      `(${failure.detail ?? (error as Error).message}). A schema this deep or this large needs simplifying.`,
    { param: constraintParam(constraint), cause: error },
  );
}

/** The request parameter a constraint's grammar came from: one schema where there is one, else `tools`. */
function constraintParam(constraint: OutputConstraint): string {
  if (constraint.type === 'json') return jsonParam(constraint);
  const { tools, choice } = constraint;
  const named = typeof choice === 'object' ? tools.findIndex((t) => t.name === choice.name) : -1;
  if (named >= 0) return toolParam(tools[named]!, named);
  return tools.length === 1 && !constraint.text ? toolParam(tools[0]!, 0) : 'tools';
}

/** A request whose XGrammar instance failed under it (another request's grammar broke it): sending it again heals. */
const restarted = (cause: unknown) =>
  new EngineError(
    'unavailable',
    'The grammar engine (XGrammar) failed while this request used it and was restarted: sending it again can succeed.',
    { cause, retry: true },
  );

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
    this.#fail(() => fillNextTokenBitmask(this.#matcher, this.#vocabulary.strings.length, bits));
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
    const accepted = this.#fail(() =>
      callXGrammar(this.#matcher, () => this.#matcher.handle.AcceptToken(token, false)),
    );
    if (this.#stops.has(token)) this.#done = true;
    else this.#utf8State = this.#utf8.next(this.#utf8State, token);
    return accepted && this.#utf8State !== -1;
  }

  /**
   * The text the grammar allows next and nothing else (XGrammar's jump-forward string: the rest of a key, punctuation,
   * a `const`), or '' when the model has a choice, the grammar is done, or the output stands inside a character.
   */
  forcedText(): string {
    if (this.#done || this.#utf8State !== 0) return '';
    return this.#fail(() => callXGrammar(this.#matcher, () => this.#matcher.handle.FindJumpForwardString()));
  }

  dispose(): void {
    try {
      this.#matcher.dispose();
    } catch {
      // XGrammar failed as it freed the matcher: its instance is dropped (see loadXGrammar), and all it held with it.
    }
  }

  /** `call`, whose failure inside XGrammar (its instance failed, under this choice or another request) is retryable. */
  #fail<T>(call: () => T): T {
    try {
      return call();
    } catch (error) {
      throw xgrammarFailure(error) ? restarted(error) : error;
    }
  }
}
