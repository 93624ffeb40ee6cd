import type { ChatChoice, ChatEvent, ChatResult, FinishReason, FunctionCall, GeneratedTokenLogprob } from './types.ts';

interface Draft {
  text: string;
  reasoning: string | undefined;
  calls: FunctionCall[];
  logprobs: GeneratedTokenLogprob[] | undefined;
  finishReason: FinishReason | undefined;
}

/**
 * A chat result put together from a generation's events: each choice's text, calls and log probabilities as its events
 * carried them, and its end. Whoever hears a generation's events builds its result with this, so that a result says
 * exactly what the events said: the choice pipeline of a local model, the service worker from an engine worker's
 * events (only the usage crosses the port after them), a remote candidate from the chunks a server streamed.
 *
 * @example
 * const builder = new ChatResultBuilder({ choices: request.n, logprobs: request.logprobs !== undefined });
 * onEvent = (event) => builder.add(event);
 * // … once the generation is over:
 * return builder.result(usage);
 */
export class ChatResultBuilder {
  readonly #drafts: Draft[] = [];
  readonly #logprobs: boolean;

  /**
   * @param choices - how many choices to expect (more are added as events name them).
   * @param logprobs - whether log probabilities were asked for: every choice then lists them, if only an empty list.
   */
  constructor({ choices = 0, logprobs = false }: { choices?: number; logprobs?: boolean } = {}) {
    this.#logprobs = logprobs;
    for (let i = 0; i < choices; i++) this.#draft(i);
  }

  /** Whether every choice seen so far has ended. */
  get finished(): boolean {
    return this.#drafts.length > 0 && this.#drafts.every((d) => d?.finishReason !== undefined);
  }

  add(event: ChatEvent): void {
    const draft = this.#draft(event.choice);
    switch (event.type) {
      case 'delta':
        draft.text += event.text;
        if (event.logprobs) (draft.logprobs ??= []).push(...event.logprobs);
        return;
      case 'reasoning':
        draft.reasoning = (draft.reasoning ?? '') + event.text;
        return;
      case 'tool_call':
        draft.calls[event.index] = { name: event.name, arguments: '' };
        return;
      case 'tool_arguments': {
        const call = draft.calls[event.index];
        if (call) call.arguments += event.text;
        return;
      }
      case 'finish':
        draft.finishReason = event.reason;
    }
  }

  /** The result, with the usage the generation reported; a choice whose end was never heard ended on its own. */
  result(usage: ChatResult['usage']): ChatResult {
    const choices = Array.from(this.#drafts, (draft): ChatChoice => {
      const calls = (draft?.calls ?? []).filter(Boolean);
      return {
        text: draft?.text ?? '',
        ...(draft?.reasoning !== undefined && { reasoning: draft.reasoning }),
        finishReason: draft?.finishReason ?? 'stop',
        ...(calls.length && { toolCalls: calls }),
        ...(draft?.logprobs && { logprobs: draft.logprobs }),
      };
    });
    return { choices, usage };
  }

  #draft(choice: number): Draft {
    return (this.#drafts[choice] ??= {
      text: '',
      reasoning: undefined,
      calls: [],
      logprobs: this.#logprobs ? [] : undefined,
      finishReason: undefined,
    });
  }
}
