/**
 * How a model family writes a tool call in its reply, as data. The reply parser reads calls with it; the constraint
 * that keeps calls valid (src/grammar) builds its grammar from the same description, so what is parsed and
 * what is enforced cannot drift apart.
 */
export interface ToolCallSyntax {
  /** The family's name, for logs and tests. */
  family: 'hermes' | 'llama3-json';
  /**
   * What opens a call in the reply, newline included (`<tool_call>\n`), and what closes it (`\n</tool_call>`). Both
   * empty for a bare call: a JSON object that is the whole reply. The parser accepts any white space where these hold
   * a newline; generation writes them as they are.
   */
  open: string;
  close: string;
  /** Between two calls of one reply. */
  separator: string;
  /** The keys of the call object: the function's name, then its arguments object. */
  nameKey: 'name';
  argumentsKey: 'arguments' | 'parameters';
  /** Whether one reply may hold several calls; a family whose template renders one call per turn says no. */
  parallel: boolean;
}

/**
 * Hermes, as Qwen2.5 and Qwen3 (and tiny-chat) write calls: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`,
 * one block per call, optionally after some text.
 */
export const HERMES: ToolCallSyntax = Object.freeze({
  family: 'hermes',
  open: '<tool_call>\n',
  close: '\n</tool_call>',
  separator: '\n',
  nameKey: 'name',
  argumentsKey: 'arguments',
  parallel: true,
});

/**
 * Llama 3.1–3.3 with custom tools: the reply is one JSON object `{"name": …, "parameters": {…}}`; its template renders
 * exactly one call per assistant turn (it raises on more).
 */
export const LLAMA3_JSON: ToolCallSyntax = Object.freeze({
  family: 'llama3-json',
  open: '',
  close: '',
  separator: '',
  nameKey: 'name',
  argumentsKey: 'parameters',
  parallel: false,
});

/**
 * The families whose chat templates render tools themselves, recognised by what their templates write. A template
 * that mentions tools but matches none of these is treated as one without tool support (see `toolFormatOf`).
 */
const TEMPLATE_FAMILIES: readonly { syntax: ToolCallSyntax; recognise: (template: string) => boolean }[] = [
  // Qwen3.5 (and Qwen3-Coder) write `<tool_call>` too, around XML (`<function=name>`, `<parameter=key>`): not Hermes.
  // Their templates would ask for calls Lantern does not read; the generic format asks for Hermes itself.
  { syntax: HERMES, recognise: (t) => t.includes('<tool_call>') && !t.includes('<function=') },
  { syntax: LLAMA3_JSON, recognise: (t) => t.includes('"parameters": ') && t.includes('ipython') },
];

/** How tools reach a model and come back: through its own template, or through Lantern's generic (Hermes) format. */
export interface ToolFormat {
  /** `template`: the model's chat template renders tools, calls and results; `generic`: Lantern writes them as text. */
  mode: 'template' | 'generic';
  syntax: ToolCallSyntax;
}

/**
 * The tool format for a model with this chat template (undefined: a model without one, such as web-llm's, whose
 * prompts are built from its own conversation templates). Templates that use `tools` and write a known call syntax
 * render tools themselves; every other model gets the generic format, Hermes written by Lantern.
 */
export function toolFormatOf(template: string | undefined): ToolFormat {
  if (template !== undefined && /\btools\b/.test(template)) {
    const family = TEMPLATE_FAMILIES.find((f) => f.recognise(template));
    if (family) return { mode: 'template', syntax: family.syntax };
  }
  return { mode: 'generic', syntax: HERMES };
}
