/**
 * The grammar of an output constraint as llama.cpp runs it natively: GBNF, translated from the grammar Lantern already
 * writes for XGrammar (`constraintGrammar` in output-constraint.ts), so that both engines enforce one language and the
 * schemas are compiled once, by one compiler. The translation is of form only:
 *
 * - rule names: GBNF takes `[a-zA-Z0-9-]` only, so `_` becomes `-` (Lantern's names hold no `-`, so no two meet);
 *   each grammar embedded in a structural tag gets a prefix of its own (`g0-root`), as every one of them has a `root`;
 * - literals and character classes are decoded from XGrammar's escapes and written again with GBNF's (`\xNN`, `\uNNNN`,
 *   `\UNNNNNNNN`: GBNF knows no `\-`, `\^` or `\0`), over code points as both engines read them;
 * - XGrammar's lookahead assertion `(= …)` is dropped: Lantern writes it only after a JSON string's closing quote, to
 *   tell XGrammar what may follow, and what follows in the grammar is always one of those characters or the end (the
 *   language is the same; checked on samples in test/llama-grammar.test.ts);
 * - repetitions `{m}`, `{m,}`, `{m,n}`, groups, `?`, `*`, `+` and `""` are the same in both;
 * - a structural tag (tool calls, a thought before the answer) is written out as the sequence and alternatives it
 *   stands for: a tag is its begin, its content and its end; `any_text` up to a tag's end is text that does not hold the
 *   end, then the end (an automaton over the end's prefixes, as XGrammar stops the text at the end's first occurrence).
 *
 * `tool_choice: "auto"` with a call marker (Hermes' `<tool_call>`, an XGrammar `triggered_tags`) is written as free text
 * that does not hold the marker, a whole call once it does, then free text again (or the end, with one call at most).
 * llama.cpp can run such a grammar lazily, from a trigger on, but node-llama-cpp 3.21.1 builds every grammar eagerly
 * (`llama_grammar_init_impl` with `lazy = false` and no triggers) and exposes no trigger: so it runs over the free text
 * too, as XGrammar's matcher does on the mask path, and enforces the same language (checked on samples in
 * test/llama-grammar.test.ts). `undefined` is left for what this does not know how to write (a structural tag of
 * another shape, several triggers): the core then keeps the request on the logits path.
 */

import type { OutputConstraint } from '../engine-interface/index.ts';
import { HERMES, type ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { BoundedCache } from './bounded-cache.ts';
import { constraintGrammar, grammarKey, type GrammarSpec } from './output-constraint.ts';

/** Distinct constraints whose GBNF is kept, as many as their XGrammar grammars (output-constraint.ts). */
const CACHE_SIZE = 64;

const translations = new BoundedCache<string, Promise<string | undefined>>(CACHE_SIZE);

/**
 * The constraint's grammar as GBNF (root rule `root`) for a model whose tool calls read as `syntax`, a reasoning model
 * thinking first where `thinking` is set; `undefined` where GBNF run by node-llama-cpp cannot say it faithfully (see
 * above). A constraint no grammar would enforce is refused as `constraintGrammar` refuses it (a 400 naming the param).
 */
export function llamaGrammar(
  constraint: OutputConstraint,
  syntax: ToolCallSyntax = HERMES,
  { thinking = false }: { thinking?: boolean } = {},
): Promise<string | undefined> {
  const key = grammarKey(constraint, syntax, thinking);
  const gbnf = translations.getOrCreate(key, async () =>
    gbnfOf(await constraintGrammar(constraint, syntax, { thinking })),
  );
  gbnf.catch(() => translations.delete(key));
  return gbnf;
}

/**
 * A grammar of XGrammar (EBNF or a structural tag) as GBNF, or `undefined` where this cannot say it: a structural tag
 * of a shape it does not know, or EBNF it cannot read (Lantern writes none; were it to, the request would still be
 * served, on the mask path, rather than fail).
 */
export function gbnfOf(spec: GrammarSpec): string | undefined {
  const writer = new GbnfWriter();
  try {
    if ('ebnf' in spec) return writer.text(writer.grammar(spec.ebnf, ''));
    const root = writer.format(spec.structuralTag.format as Format);
    return root === undefined ? undefined : writer.text(root);
  } catch (error) {
    if (error instanceof UnreadableEbnf) return undefined;
    throw error;
  }
}

/** EBNF that this translation cannot read. */
class UnreadableEbnf extends Error {}

/**
 * The most a repetition's bound may say for llama.cpp's GBNF parser (`MAX_REPETITION_THRESHOLD`, which refuses the
 * whole grammar past it): a schema's `maxLength: 5000` stays on the mask path, which has no such bound.
 */
const MAX_REPETITION = 2000;

/**
 * How many elements the repetition about to follow `tokens` repeats, as llama.cpp counts them against its bound (its
 * bound times this must stay under it): one for a name, literal or class; a group's every element, counted generously.
 */
function repeatedElements(tokens: readonly Token[]): number {
  if (tokens.at(-1)?.text !== ')') return 1;
  let depth = 0;
  let elements = 0;
  for (let i = tokens.length - 1; i >= 0; i--) {
    const { kind, text } = tokens[i]!;
    if (text === ')') depth++;
    else if (text === '(' && --depth === 0) break;
    else if (kind !== 'op') elements++;
  }
  return Math.max(1, elements);
}

/** A part of a structural tag, as far as Lantern writes them. */
type Format = { type: string } & Record<string, unknown>;

class GbnfWriter {
  readonly #rules: string[] = [];
  #count = 0;

  text(root: string): string {
    return [...(root === 'root' ? [] : [`root ::= ${root}`]), ...this.#rules].join('\n');
  }

  /** Adds an EBNF grammar's rules, each name prefixed; returns its root's name. */
  grammar(ebnf: string, prefix: string): string {
    for (const [name, body] of parseEbnf(ebnf)) {
      const text = body.map((t) => (t.kind === 'name' ? ruleName(prefix, t.text) : t.text)).join(' ');
      this.#rules.push(`${ruleName(prefix, name)} ::= ${text || '""'}`);
    }
    return ruleName(prefix, 'root');
  }

  /** A structural tag's format as a GBNF expression, `undefined` when GBNF cannot say it. */
  format(format: Format): string | undefined {
    switch (format.type) {
      case 'const_string':
        return gbnfLiteral(format.value as string);
      case 'grammar':
        return this.grammar(format.grammar as string, `g${this.#count++}-`);
      case 'sequence':
      case 'or': {
        const parts = (format.elements as Format[]).map((e) => this.format(e));
        if (parts.some((p) => p === undefined)) return undefined;
        return `(${parts.join(format.type === 'or' ? ' | ' : ' ')})`;
      }
      case 'tag': {
        const content = format.content as Format;
        const end = format.end as string;
        const begin = gbnfLiteral(format.begin as string);
        if (content.type === 'any_text') return `(${begin} ${this.#textUntil(end, () => '', false)})`;
        const inner = this.format(content);
        return inner === undefined ? undefined : `(${begin} ${inner} ${gbnfLiteral(end)})`;
      }
      case 'tags_with_separator': {
        const tags = (format.tags as Format[]).map((t) => this.format(t));
        if (tags.some((t) => t === undefined)) return undefined;
        const tag = `(${tags.join(' | ')})`;
        const all = `${tag} (${gbnfLiteral(format.separator as string)} ${tag})*`;
        return format.at_least_one ? `(${all})` : `(${all})?`;
      }
      case 'triggered_tags':
        return this.#triggered(format);
      default:
        return undefined;
    }
  }

  /**
   * `tool_choice: "auto"` with a call marker: free text until the trigger (`<tool_call>`), which must go on as one of
   * the tags (each tag's begin starts with it), then free text again, or the end after the first call where
   * `stop_after_first`. The text may end anywhere before a trigger is complete, as XGrammar's matcher lets it.
   */
  #triggered(format: Format): string | undefined {
    const triggers = format.triggers as string[];
    const tags = format.tags as Format[];
    const trigger = triggers[0];
    if (triggers.length !== 1 || trigger === undefined || format.at_least_one) return undefined;
    if (tags.some((t) => !(t.begin as string).startsWith(trigger))) return undefined;
    const calls = tags.map((t) => this.format({ ...t, begin: (t.begin as string).slice(trigger.length) }));
    if (calls.some((c) => c === undefined)) return undefined;
    const call = `(${calls.join(' | ')})`;
    return this.#textUntil(trigger, (text) => (format.stop_after_first ? call : `${call} ${text}`), true);
  }

  /**
   * Text that does not hold `end`, then `end`, then what `after` writes (given the text's own rule, to come back to):
   * a state per prefix of `end` already read (Knuth–Morris–Pratt), so that the text stops at the first occurrence of
   * `end`, as XGrammar's `any_text` and triggers do. With `mayEnd`, the text may also end without `end`.
   */
  #textUntil(end: string, after: (text: string) => string, mayEnd: boolean): string {
    const chars = Array.from(end);
    const name = `t${this.#count++}`;
    const then = after(`${name}-0`);
    // The longest prefix of `end` that is a suffix of `read`.
    const fallback = (read: string[]) => {
      for (let k = Math.min(read.length, chars.length - 1); k > 0; k--) {
        if (read.slice(read.length - k).every((c, i) => c === chars[i])) return k;
      }
      return 0;
    };
    const distinct = [...new Set(chars)];
    for (let k = 0; k < chars.length; k++) {
      // The characters that lead on into `end` (or back to a shorter prefix of it); any other starts over.
      const moves = distinct
        .map((c) => ({ c, next: c === chars[k] ? k + 1 : fallback([...chars.slice(0, k), c]) }))
        .filter(({ next }) => next > 0);
      const options = moves.map(({ c, next }) => {
        if (next < chars.length) return `${gbnfLiteral(c)} ${name}-${next}`;
        return then ? `${gbnfLiteral(c)} ${then}` : gbnfLiteral(c);
      });
      const others = `[^${moves.map(({ c }) => classChar(c)).join('')}] ${name}-0`;
      this.#rules.push(`${name}-${k} ::= ${[...(mayEnd ? ['""'] : []), ...options, others].join(' | ')}`);
    }
    return `${name}-0`;
  }
}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const LOOKAHEAD = /\(\s*=/y;
const HEX = /[0-9a-fA-F]+/y;

/** Whether a lookahead assertion `(= …)` opens at `i`. */
function lookahead(ebnf: string, i: number): boolean {
  LOOKAHEAD.lastIndex = i;
  return LOOKAHEAD.test(ebnf);
}

/** A rule's name in GBNF, which takes letters, digits and `-` only. */
const ruleName = (prefix: string, name: string) => prefix + name.replaceAll('_', '-');

/** XGrammar EBNF as its rules: a name and the tokens of its body (which runs to the next `name ::=`, or the end). */
function parseEbnf(ebnf: string): [string, Token[]][] {
  const rules: [string, Token[]][] = [];
  const tokens = tokenize(ebnf);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === 'name' && tokens[i + 1]?.text === '::=') {
      rules.push([token.text, []]);
      i++;
    } else if (rules.length) rules.at(-1)![1].push(token);
    else throw new UnreadableEbnf(`EBNF that does not start with a rule: ${ebnf.slice(0, 40)}`);
  }
  return rules;
}

interface Token {
  kind: 'name' | 'literal' | 'class' | 'op';
  /** As GBNF writes it (names as XGrammar spells them: {@link rewrite} renames them). */
  text: string;
}

/** XGrammar EBNF's tokens, literals and classes already written in GBNF's escapes; lookaheads left out. */
function tokenize(ebnf: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < ebnf.length) {
    const c = ebnf[i]!;
    if (c === ' ' || c === '\n' || c === '\t' || c === '\r') i++;
    else if (c === '#') while (i < ebnf.length && ebnf[i] !== '\n') i++;
    else if (ebnf.startsWith('::=', i)) {
      tokens.push({ kind: 'op', text: '::=' });
      i += 3;
    } else if (c === '(' && lookahead(ebnf, i)) {
      // A lookahead assertion: skipped whole, literals and classes inside it included.
      let depth = 0;
      do {
        const d = ebnf[i]!;
        if (d === '"' || d === '[') i = readQuoted(ebnf, i, d === '"' ? '"' : ']').end;
        else {
          if (d === '(') depth++;
          else if (d === ')') depth--;
          i++;
        }
      } while (depth > 0 && i < ebnf.length);
    } else if (c === '"') {
      const { chars, end } = readQuoted(ebnf, i, '"');
      tokens.push({ kind: 'literal', text: gbnfLiteral(String.fromCodePoint(...chars.map((ch) => ch.cp))) });
      i = end;
    } else if (c === '[') {
      const { chars, end } = readQuoted(ebnf, i, ']');
      tokens.push({ kind: 'class', text: gbnfClass(chars) });
      i = end;
    } else if (c === '{') {
      const end = ebnf.indexOf('}', i);
      const bounds = ebnf.slice(i, end + 1).replace(/\s+/g, '');
      if (end < 0 || !/^\{\d+(,\d*)?\}$/.test(bounds))
        throw new UnreadableEbnf(`EBNF repetition ${ebnf.slice(i, i + 12)}`);
      if (Math.max(...bounds.match(/\d+/g)!.map(Number)) * repeatedElements(tokens) >= MAX_REPETITION)
        throw new UnreadableEbnf(`a repetition ${bounds} past llama.cpp's ${MAX_REPETITION}`);
      tokens.push({ kind: 'op', text: bounds });
      i = end + 1;
    } else if ('()|*+?'.includes(c)) {
      tokens.push({ kind: 'op', text: c });
      i++;
    } else {
      NAME.lastIndex = i;
      const name = NAME.exec(ebnf)?.[0];
      if (!name) throw new UnreadableEbnf(`EBNF that GBNF cannot say at ${JSON.stringify(ebnf.slice(i, i + 20))}`);
      tokens.push({ kind: 'name', text: name });
      i += name.length;
    }
  }
  return tokens;
}

/** One character of a literal or class: its code point, and whether it was escaped (`\-` is no range's dash). */
interface Char {
  cp: number;
  escaped: boolean;
}

const NAMED_ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, b: 8, f: 12, v: 11, '0': 0, e: 27 };

/** The characters of a literal (`"…"`) or class (`[…]`) starting at `start`, decoded from XGrammar's escapes. */
function readQuoted(ebnf: string, start: number, close: string): { chars: Char[]; end: number } {
  const chars: Char[] = [];
  let i = start + 1;
  while (i < ebnf.length && ebnf[i] !== close) {
    if (ebnf[i] !== '\\') {
      const cp = ebnf.codePointAt(i)!;
      chars.push({ cp, escaped: false });
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = ebnf[i + 1]!;
    const hex = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hex) {
      const digits = ebnf.slice(i + 2, i + 2 + hex);
      HEX.lastIndex = 0;
      if (HEX.exec(digits)?.[0].length !== hex) throw new UnreadableEbnf(`EBNF escape \\${e}${digits}`);
      chars.push({ cp: parseInt(digits, 16), escaped: true });
      i += 2 + hex;
    } else {
      chars.push({ cp: NAMED_ESCAPES[e] ?? e.codePointAt(0)!, escaped: true });
      i += e.length + 1;
    }
  }
  if (i >= ebnf.length) throw new UnreadableEbnf(`EBNF ${close === '"' ? 'literal' : 'class'} without its end`);
  return { chars, end: i + 1 };
}

/**
 * A code point as GBNF writes it inside a literal (`inClass` false) or a class: ASCII as an escape where it could mean
 * something there (in a class, all but letters, digits and the space), other characters as they are.
 */
function gbnfChar(cp: number, inClass: boolean): string {
  if (cp < 0x80) {
    const plain = inClass
      ? (cp >= 0x30 && cp <= 0x39) || ((cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a) || cp === 0x20
      : cp >= 0x20 && cp < 0x7f && cp !== 0x22 && cp !== 0x5c;
    return plain ? String.fromCharCode(cp) : `\\x${cp.toString(16).padStart(2, '0')}`;
  }
  // Lone surrogates have no UTF-8: written as escapes (no text holds them, in either engine).
  if (cp >= 0xd800 && cp <= 0xdfff) return `\\u${cp.toString(16)}`;
  return String.fromCodePoint(cp);
}

const classChar = (c: string) => gbnfChar(c.codePointAt(0)!, true);

/** A text as a GBNF literal. */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const c of text) out += gbnfChar(c.codePointAt(0)!, false);
  return out + '"';
}

/** An XGrammar class's characters (`^` first: negated) as a GBNF class. */
function gbnfClass(chars: Char[]): string {
  const negated = chars[0]?.cp === 0x5e && !chars[0].escaped;
  const items = negated ? chars.slice(1) : chars;
  let out = '';
  for (let k = 0; k < items.length; k++) {
    const dash = items[k + 1];
    const last = items[k + 2];
    const write = (ch: Char) => gbnfChar(ch.cp, true);
    if (dash && last && dash.cp === 0x2d && !dash.escaped) {
      out += `${write(items[k]!)}-${write(last)}`;
      k += 2;
    } else out += write(items[k]!);
  }
  return `[${negated ? '^' : ''}${out}]`;
}
