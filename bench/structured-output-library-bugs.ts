/**
 * Minimal reproductions of the constrained-decoding library bugs that Lantern works around (README "Structured
 * output"), to re-check on every upgrade of `@mlc-ai/web-xgrammar` or `@cfworker/json-schema`:
 *
 *   npx tsx bench/structured-output-library-bugs.ts
 *
 * Each line says whether the bug still reproduces. XGrammar is driven over a vocabulary of the 256 single bytes (as
 * GPT-2 byte characters) plus an end token, so every input below is spelled byte by byte. The crashes on
 * `minProperties`, `minItems` without `items`, boolean `exclusiveMinimum` and `false` subschemas abort the WebAssembly
 * module and are therefore not run here (Lantern's own schema compiler, schema-grammar.ts, writes those grammars).
 */
import { Validator } from '@cfworker/json-schema';
import { loadXGrammar } from '../src/grammar/xgrammar.ts';

const xg = await loadXGrammar();
const chars: string[] = [];
for (let b = 0, extra = 0; b < 256; b++) {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  chars.push(String.fromCharCode(printable ? b : 256 + extra++));
}
const END = 256;
const info = await xg.TokenizerInfo.createTokenizerInfo([...chars, '</s>'], 'byte_level', false, 257, [END]);
const compiler = await xg.GrammarCompiler.createGrammarCompiler(info);
const text = (s: string) => [...Buffer.from(s, 'utf8')];

/** [what, schema, bytes the schema's grammar should refuse] */
const CASES: [string, string, number[]][] = [
  ['string admits a lead byte that is never UTF-8 (F5)', '{"type":"string"}', [0x22, 0xf5, 0x9f, 0x90, 0x99, 0x22]],
  ['string admits an overlong four-byte sequence (F0 8E)', '{"type":"string"}', [0x22, 0xf0, 0x8e, 0x89, 0x85, 0x22]],
  ['maxLength string admits a raw control character', '{"type":"string","maxLength":3}', [0x22, 0x61, 0x1e, 0x22]],
  ['number bounds apply to the integer part (1.5 ≤ 1)', '{"type":"number","minimum":0,"maximum":1}', text('1.5')],
  ['number bounds apply to the integer part (-3.5 ≥ -3)', '{"type":"number","minimum":-3,"maximum":3}', text('-3.5')],
  ['a one-sided number bound is ignored (4 ≥ 6)', '{"type":"number","minimum":6}', text('4')],
  ['a range across zero admits a leading zero', '{"type":"number","minimum":-5,"maximum":9999}', text('09')],
  ['date admits February 31st', '{"type":"string","format":"date"}', text('"2023-02-31"')],
  ['date-time admits minute 60', '{"type":"string","format":"date-time"}', text('"2023-01-01T10:60:00Z"')],
];

for (const [what, schema, bytes] of CASES) {
  const matcher = await xg.GrammarMatcher.createGrammarMatcher(
    await compiler.compileJSONSchema(schema, false, -1, [',', ':'], true),
  );
  const accepted = [...bytes, END].every((b) => matcher.handle.AcceptToken(b, false));
  matcher.dispose();
  console.log(`${accepted ? 'REPRODUCES' : 'fixed     '}  web-xgrammar: ${what}: ${schema}`);
}

let threw = false;
try {
  new Validator({ type: 'object', additionalProperties: false }).validate(JSON.parse('{"\\ud800":1}'));
} catch {
  threw = true;
}
console.log(
  `${threw ? 'REPRODUCES' : 'fixed     '}  @cfworker/json-schema: a lone surrogate in a property name throws URIError`,
);
