import type { Context } from 'hono';
import { creationClock } from '../../record-store/index.ts';
import type {
  ChatChoice,
  ChatEvent,
  ChatResult,
  GeneratedTokenLogprob,
  WireObject,
} from '../../engine-interface/index.ts';
import { newCompletionId, newToolCallId } from '../ids.ts';
import { parseJsonObject } from '../request-body.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { eventStream, JsonText } from '../sse.ts';
import { completionUsage, type CompletionUsage } from '../usage.ts';
import { withBothReasoningNames } from './reasoning-names.ts';
import { chatParser } from './schema.ts';
import { storedMessages, type StoredCompletionObject } from './stored.ts';
import type { ChatCompletion, ChatCompletionChunk, ChoiceLogprobs } from './wire.ts';

/**
 * A finished choice as OpenAI's message: `content` null when it only called tools, each call with a fresh id; a thought
 * under both names clients read (reasoning-names.ts).
 */
function toMessage(
  choice: ChatChoice,
  callId: (index: number) => string | undefined = () => undefined,
): ChatCompletion['choices'][number]['message'] {
  const calls = choice.toolCalls ?? [];
  const thought =
    choice.reasoning !== undefined ? { reasoning_content: choice.reasoning, reasoning: choice.reasoning } : {};
  if (!calls.length) return { role: 'assistant', content: choice.text, refusal: null, ...thought };
  return {
    role: 'assistant',
    content: choice.text || null,
    refusal: null,
    ...thought,
    tool_calls: calls.map((call, i) => ({ id: callId(i) ?? newToolCallId(), type: 'function', function: { ...call } })),
  };
}

/** Engine log probabilities in the wire's shape. */
const toLogprobs = (tokens: GeneratedTokenLogprob[]): ChoiceLogprobs => ({
  content: tokens.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: t.bytes,
    top_logprobs: t.topLogprobs.map((top) => ({ token: top.token, logprob: top.logprob, bytes: top.bytes })),
  })),
  refusal: null,
});

/**
 * `POST /v1/chat/completions`, as one JSON completion or as a stream of chunks. The engine gets the client's body too
 * (`clientBody`): a remote candidate forwards it and hands back the server's own completion or chunks, which are
 * answered as they are, with only `model` set to the public ID. Answers name the ID that served (`served.model`), when
 * the request named an alias of it (`gpt-4o-mini`) too. `x-lantern-backend` names the candidate that answered.
 */
export function createChatCompletion({ engine, limits, now, ownedBy, errorBody, chatCompletions }: RouteDeps) {
  const parse = chatParser(limits);
  // Kept completions list in the order they were made, those of one millisecond too.
  const createdAt = creationClock(now);
  return async (c: Context<Env>) => {
    const clientBody = await parseJsonObject(c.get('body'));
    const { model, stream, includeUsage, request, store, metadata } = parse(clientBody);
    // Prompts are cached per key: no key's prompts reach another's answers or `cached_tokens` (issue 41).
    request.cacheScope = c.get('key').id;
    const id = newCompletionId();
    const created = Math.floor(now() / 1000);
    const served = new ServedBy(model, ownedBy);
    const { onServe } = served;
    /** The finished completion, from the engine's result: each tool call with the id it was answered with. */
    const completionOf = (result: ChatResult, callIds?: Map<string, string>): ChatCompletion => ({
      id,
      object: 'chat.completion',
      created,
      model: served.model,
      choices: result.choices.map((choice, index) => ({
        index,
        message: toMessage(choice, (call) => callIds?.get(`${index}:${call}`)),
        logprobs: choice.logprobs ? toLogprobs(choice.logprobs) : null,
        finish_reason: choice.finishReason,
      })),
      usage: completionUsage(result.usage),
      system_fingerprint: served.fingerprint,
    });
    /**
     * Keeps a finished completion when the request asked (`store: true`), with its metadata and messages. A completion
     * that could not be kept is still the answer: the failure is reported as any server failure is.
     */
    const keep = async (completion: ChatCompletion | WireObject) => {
      if (!store) return;
      const owner = c.get('key').id;
      // Under the id the client was answered with: a remote server's completion has its own.
      const keptId = typeof completion.id === 'string' ? completion.id : id;
      const kept = { ...completion, id: keptId, metadata } as StoredCompletionObject;
      const at = createdAt();
      await chatCompletions
        .put({
          id: keptId,
          owner,
          createdAt: at,
          storedAt: at,
          data: { completion: kept, messages: storedMessages(keptId, clientBody.messages) },
        })
        .catch((error: unknown) => errorBody(error, c.get('requestId')));
    };

    if (!stream) {
      const result = await engine.chat(model, request, { signal: c.req.raw.signal, clientBody, onServe });
      if (result.serverBody) {
        const answered = { ...withBothReasoningNames(result.serverBody), model: served.model };
        await keep(answered);
        return served.label(c.json(answered));
      }
      const completion = completionOf(result);
      await keep(completion);
      return served.label(c.json<ChatCompletion>(completion));
    }

    // What every chunk shares around its `choices`, serialised once (again only if `onServe` changed the model before
    // the first chunk): each token's chunk is then its choice's JSON between the two, with one `JSON.stringify` of its
    // text, rather than a whole object stringified per token (issue 26). Keys in the order `chunk` gives them.
    let head = '';
    let headFor: string | undefined;
    const tail = includeUsage ? ',"usage":null}' : '}';
    const choiceChunk = (choiceJson: string) => {
      if (headFor !== served.model + served.fingerprint) {
        headFor = served.model + served.fingerprint;
        const envelope = { id, object: 'chat.completion.chunk', created, model: served.model };
        head = `${JSON.stringify({ ...envelope, system_fingerprint: served.fingerprint }).slice(0, -1)},"choices":[`;
      }
      return new JsonText(`${head}${choiceJson}]${tail}`);
    };
    /** A chunk of one choice's text and its log probabilities, as `chunk` writes it. */
    const textChunk = (index: number, delta: string, logprobs: string) =>
      choiceChunk(`{"index":${index},"delta":{${delta}},"logprobs":${logprobs},"finish_reason":null}`);
    const chunk = (choices: ChatCompletionChunk['choices'], usage: CompletionUsage | null = null) => {
      const out: ChatCompletionChunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model: served.model,
        system_fingerprint: served.fingerprint,
        choices,
      };
      if (includeUsage) out.usage = usage;
      return out;
    };
    const response = await eventStream(
      async (send, signal) => {
        let passedThrough = false;
        const onServerChunk = (serverChunk: WireObject) => {
          passedThrough = true;
          send({ ...withBothReasoningNames(serverChunk), model: served.model });
        };
        const opened = new Set<number>();
        /** The ids the stream gave each choice's calls (`choice:index`): a kept completion shows the same. */
        const callIds = new Map<string, string>();
        const onEvent = (event: ChatEvent) => {
          // Each choice opens with its role. Sent with the first token rather than up front, so that a request the
          // engine refuses (a prompt over the context window) still gets its own status code instead of a stream. A
          // choice that begins with a tool call opens with it, as OpenAI's do: role, `content: null`, the call.
          if (opened.size === 0) {
            for (let index = 0; index < request.n; index++) {
              if (event.type === 'tool_call' && event.choice === index) continue;
              opened.add(index);
              send(chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
            }
          }
          const delta = (d: ChatCompletionChunk['choices'][number]['delta']) =>
            send(chunk([{ index: event.choice, delta: d, logprobs: null, finish_reason: null }]));
          switch (event.type) {
            case 'delta': {
              const logprobs = event.logprobs ? JSON.stringify(toLogprobs(event.logprobs)) : 'null';
              return send(textChunk(event.choice, `"content":${JSON.stringify(event.text)}`, logprobs));
            }
            case 'reasoning': {
              // Under both names clients read (reasoning-names.ts).
              const text = JSON.stringify(event.text);
              return send(textChunk(event.choice, `"reasoning_content":${text},"reasoning":${text}`, 'null'));
            }
            case 'tool_call': {
              const open = opened.has(event.choice) ? {} : { role: 'assistant' as const, content: null };
              opened.add(event.choice);
              const call = { index: event.index, id: newToolCallId(), type: 'function' as const };
              callIds.set(`${event.choice}:${event.index}`, call.id);
              return delta({ ...open, tool_calls: [{ ...call, function: { name: event.name, arguments: '' } }] });
            }
            case 'tool_arguments':
              return delta({ tool_calls: [{ index: event.index, function: { arguments: event.text } }] });
            case 'finish':
              return send(chunk([{ index: event.choice, delta: {}, logprobs: null, finish_reason: event.reason }]));
          }
        };
        const result = await engine.chat(model, request, { signal, onEvent, onServerChunk, clientBody, onServe });
        // A server's stream carried its own usage chunk, when the client asked for it.
        if (includeUsage && !passedThrough) send(chunk([], completionUsage(result.usage)));
        // Kept before the stream ends, so that a client that lists its completions after the stream finds this one.
        await keep(completionOf(result, callIds));
      },
      { signal: c.req.raw.signal, errorBody: (error) => errorBody(error, c.get('requestId')) },
    );
    return served.label(response);
  };
}
