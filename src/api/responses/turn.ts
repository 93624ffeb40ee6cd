import {
  EngineError,
  type ChatMessage,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
} from '../../engine-interface/index.ts';
import { imageLimitsOf } from '../image-parts.ts';
import { conversationNotFound } from '../conversations/conversations.ts';
import type { RouteDeps } from '../route-deps.ts';
import { resolveConversation, toChatMessages, withItemIds } from './conversation.ts';
import { searchForTurn, withSources, type Sources } from './file-search.ts';
import type { ConversationItem, ResponsesParams } from './schema.ts';

/**
 * One turn of the Responses API, ready for the model: the conversation it continues with its own input last, the
 * messages the engine renders, and the passages `file_search` found. `POST /v1/responses`, `/compact` and
 * `/input_tokens` all build it here, so that a count is the count of the prompt a response would be given.
 */
export interface Turn {
  /** The conversation before the turn (stored, or the Conversations API's), then the request's input, with ids. */
  conversation: ConversationItem[];
  /** Where the request's own input starts in `conversation`. */
  offset: number;
  messages: ChatMessage[];
  /** The engine request but its messages (given by {@link Turn.chat}). */
  request: ChatRequest;
  sources: Sources | null;
  /** How many of the passages found the model is given: fewer once they did not fit its context window. */
  readonly given: number;
  /**
   * Runs the model on the turn with as many passages as fit: a prompt over the window is refused before any output,
   * and tried again with half as many, down to none.
   */
  chat(options: ChatOptions, messages?: ChatMessage[]): Promise<ChatResult>;
}

export async function prepareTurn(
  deps: Pick<RouteDeps, 'engine' | 'files' | 'limits' | 'responses' | 'conversations'>,
  owner: string,
  params: ResponsesParams,
  signal: AbortSignal,
): Promise<Turn> {
  const { engine, files, limits, responses } = deps;
  // A conversation of the Conversations API: its items come before the input (an unknown one is a 404).
  const context = params.conversationId === null ? null : await conversationContext(deps, owner, params);
  const resolved = await resolveConversation(responses, owner, params, context ?? []);
  // The request's own items come last in the conversation, after those of the response it continues.
  const offset = resolved.length - params.input.length;
  const conversation = withItemIds(resolved, offset);
  const earlier = context ? 'conversation' : 'previous_response_id';
  const messages = toChatMessages(params.instructions, conversation, offset, earlier);
  // Prompts are cached per key: no key's prompts reach another's answers or `cached_tokens` (issue 41).
  const request: ChatRequest = { ...params.request, messages, cacheScope: owner };
  if (messages.some((m) => m.images)) request.imageLimits = imageLimitsOf(limits);
  // `file_search` runs before the answer (an unknown vector store is a 404 before any stream).
  const sources = params.fileSearch ? await searchForTurn(files, owner, params.fileSearch, conversation, signal) : null;
  let given = sources?.results.length ?? 0;
  return {
    conversation,
    offset,
    messages,
    request,
    sources,
    get given() {
      return given;
    },
    async chat(options, prompt = messages) {
      for (;;) {
        try {
          const shown = sources ? withSources(prompt, sources, given) : prompt;
          return await engine.chat(params.model, { ...request, messages: shown }, options);
        } catch (error) {
          const tooLong = error instanceof EngineError && error.kind === 'context_length_exceeded';
          if (!tooLong || given === 0) throw error;
          given = Math.floor(given / 2);
        }
      }
    },
  };
}

/**
 * An engine error about the conversation (`messages`, as the engine calls the prompt it renders) is about the
 * request's `input`. (Refusals of `text.format` and of tools' parameters name them already: the request's constraint
 * carries this API's names.)
 */
export function asInputError(error: unknown): never {
  if (error instanceof EngineError && error.param === 'messages') {
    throw new EngineError(error.kind, error.message, { param: 'input', cause: error });
  }
  throw error;
}

/** The items of the conversation a request names, as context: another key's or an unknown one is a 404. */
async function conversationContext(
  { conversations }: Pick<RouteDeps, 'conversations'>,
  owner: string,
  params: ResponsesParams,
): Promise<ConversationItem[]> {
  const kept = await conversations.get(owner, params.conversationId!, (id) => conversationNotFound(id, 'conversation'));
  return kept.items.map(({ item }) => item);
}
