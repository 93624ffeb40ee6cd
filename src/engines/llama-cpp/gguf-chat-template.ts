import { Template } from '@huggingface/jinja';
import type { ToolPrompt } from '../../tools/tool-prompt.ts';

/**
 * A GGUF's chat template (`tokenizer.chat_template`), rendered as transformers.js renders a tokenizer's (the same
 * Jinja, the same variables: the messages, the tools, `add_generation_prompt`, the special tokens, and Qwen3's
 * `enable_thinking`), so that one model answers alike on either engine.
 */
export class ChatTemplate {
  readonly source: string;
  readonly #template: Template;
  readonly #specialTokens: Readonly<Record<string, string>>;

  constructor(source: string, specialTokens: Readonly<Record<string, string>>) {
    this.source = source;
    this.#template = new Template(source);
    this.#specialTokens = specialTokens;
  }

  /** The prompt's text, ready for the assistant's turn. */
  render(prompt: ToolPrompt, thinking: boolean): string {
    return this.#template.render({
      messages: prompt.messages,
      tools: prompt.tools ?? null,
      documents: null,
      add_generation_prompt: true,
      enable_thinking: thinking,
      ...this.#specialTokens,
    });
  }
}
