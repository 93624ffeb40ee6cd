import type { Context } from 'hono';
import type { ChatEvent, ChatOptions, ChatResult, Serving } from '../../engine-interface/index.ts';
import type { ErrorBody } from '../errors.ts';
import { itemPage, ITEM_LIST } from '../conversations/route.ts';
import { newId } from '../ids.ts';
import { readListQuery } from '../list-query.ts';
import { parseJsonObject } from '../request-body.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { eventStream } from '../sse.ts';
import { responseUsage } from '../usage.ts';
import {
  currentResponse,
  followRun,
  keep,
  responseNotFound,
  startInBackground,
  stopRun,
  streamResponse,
} from './background.ts';
import { addTurn, inputItemsOf, ownResponse } from './conversation.ts';
import { citationsFor, itemResults } from './file-search.ts';
import { ResponseOutput, type UnsequencedEvent } from './output.ts';
import { asInputError, prepareTurn } from './turn.ts';
import { responsesParser, type ResponsesParams } from './schema.ts';
import type { Response, ResponseDeleted, ResponseError, ResponseStreamEvent } from './wire.ts';

/**
 * Says that a response asked to be kept (`store`, the default) was not: the store failed (an origin over its quota)
 * or the record alone was over the store's limits. The response itself says so too, with `store: false`, which a
 * stream's last event carries where no header can follow.
 */
const STORED_HEADER = 'x-lantern-stored';

/**
 * `POST /v1/responses`: one response, as a JSON object or as OpenAI's stream of events, each with its
 * `sequence_number`. The conversation is the request's input after the stored one it continues
 * (`previous_response_id`, `item_reference`); with `store` (the default) the response and its conversation are kept.
 * A finished response is answered whether or not it could be kept (issue 22: a failed store used to turn a finished
 * generation into a 500, or a stream's `response.failed`, and the work was lost).
 */
export function createResponse(deps: RouteDeps) {
  const { limits, now, ownedBy, errorBody, responses, conversations } = deps;
  const parse = responsesParser(limits);
  return async (c: Context<Env>) => {
    const params = parse(await parseJsonObject(c.get('body')));
    const served = new ServedBy(params.model, ownedBy);
    const owner = c.get('key').id;
    const turn = await prepareTurn(deps, owner, params, c.req.raw.signal);
    const { conversation, offset, sources } = turn;
    const cite = sources ? (text: string) => citationsFor(text, sources, turn.given) : undefined;
    const addSearch = (output: ResponseOutput) => {
      if (sources) output.addFileSearch(sources.queries, params.includeSearchResults ? itemResults(sources) : null);
    };
    const chat = (options: ChatOptions) => turn.chat(options);
    const response = inProgress(newId('resp_'), Math.floor(now() / 1000), params);
    // The response names the model ID that serves it, when the request named an alias of it (`gpt-4o-mini`) too.
    const onServe = (serving: Serving) => {
      served.onServe(serving);
      response.model = served.model;
    };
    const summarised = params.settings.reasoning.summary !== null;

    /** The record of the response as it stands: true when kept, false when not (a failed store is reported). */
    const keepIt = (): Promise<boolean> =>
      keep(responses, owner, { response, conversation }, now()).catch((error: unknown) => {
        errorBody(error, c.get('requestId')); // reports it (onServerError); the client gets the response
        return false;
      });

    /**
     * Completes the response from the generation's result, and keeps it when asked. One that could not be kept is
     * still the answer, with `store: false`; the failure is reported as any server failure is, for the operator.
     */
    const complete = async (output: ResponseOutput, result: ChatResult): Promise<Response> => {
      const cut = output.finishReason === 'length';
      Object.assign(response, {
        status: cut ? 'incomplete' : 'completed',
        completed_at: Math.floor(now() / 1000),
        incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
        output: output.items,
        output_text: output.text,
        usage: responseUsage(result.usage),
      } satisfies Partial<Response>);
      if (params.store && !(await keepIt())) response.store = false;
      if (params.conversationId !== null) {
        // The turn joins its conversation; one that cannot (the conversation full or gone) is still the answer.
        await addTurn(conversations, owner, params.conversationId, conversation.slice(offset), response.output).catch(
          (error: unknown) => errorBody(error, c.get('requestId')),
        );
      }
      return response;
    };

    if (!params.stream && !params.background) {
      const output = new ResponseOutput(undefined, { summary: summarised, ...(cite && { cite }) });
      addSearch(output);
      const result = await chat({ signal: c.req.raw.signal, onServe }).catch(asInputError);
      const [choice] = result.choices;
      if (choice!.reasoning !== undefined) output.addReasoning(choice!.reasoning);
      const calls = choice!.toolCalls ?? [];
      // A reply that only called functions has no message; one with text has it before its calls, as it was written.
      if (choice!.text || !calls.length) output.addText(choice!.text, choice!.logprobs);
      calls.forEach((call, index) => {
        output.addCall(index, call.name);
        output.addArguments(index, call.arguments);
      });
      output.finish(choice!.finishReason);
      const done = await complete(output, result);
      const unkept = params.store && !done.store;
      return served.label(c.json<Response>(done, 200, unkept ? { [STORED_HEADER]: 'false' } : {}));
    }

    /**
     * The generation as the events of its stream, told to `emit`; `start` is told at the engine's first event. A
     * failure before it is thrown, to be answered with its own status, unless the response runs in the background
     * (its answer has gone: the failure is the response's); once begun, a failure ends the response `failed`, with what
     * it had written. An abort is thrown, the response's output left as it stood.
     */
    const generate = async (emit: (event: UnsequencedEvent) => void, signal: AbortSignal, start: () => void) => {
      let started = false;
      const output = new ResponseOutput(emit, { summary: summarised, ...(cite && { cite }) });
      // The output as it is written: what a background response shows while it runs.
      response.output = output.items;
      const onEvent = (event: ChatEvent) => {
        // An engine across a port may still deliver an event its abort overtook: a cancelled response takes no more
        // (a late first token would otherwise mark it `in_progress` again after it ended `cancelled`).
        if (signal.aborted) return;
        if (!started) {
          started = true;
          start();
          addSearch(output);
        }
        if (event.type === 'delta') output.addText(event.text, event.logprobs);
        else if (event.type === 'reasoning') output.addReasoning(event.text);
        else if (event.type === 'tool_call') output.addCall(event.index, event.name);
        else if (event.type === 'tool_arguments') output.addArguments(event.index, event.text);
        else output.finish(event.reason);
      };
      try {
        const result = await chat({ signal, onEvent, onServe }).catch(asInputError);
        const done = await complete(output, result);
        emit({ type: done.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response: done });
      } catch (error) {
        if (signal.aborted) {
          Object.assign(response, { output: output.items, output_text: output.text });
          throw error;
        }
        if (!started && !params.background) throw error;
        const failure = errorBody(error, c.get('requestId'));
        Object.assign(response, { status: 'failed', error: toResponseError(failure), output: output.items });
        emit({ type: 'response.failed', response });
      }
    };

    if (params.background) {
      const run = await startInBackground(deps, c, { response, conversation }, keepIt, generate);
      // The request's rate-limit slots are held until the run ends (see rateLimit).
      c.set('outlasting', run.ended);
      return params.stream ? followRun(run, -1, c, deps) : c.json<Response>(structuredClone(response));
    }

    const stream = await eventStream(
      async (send, signal) => {
        let sequence = 0;
        const emit = (event: UnsequencedEvent) => {
          const sequenced = { ...event, sequence_number: sequence++ } as ResponseStreamEvent;
          send(sequenced, sequenced.type);
        };
        // Sent with the first token, not up front: a request the engine refuses (a prompt over the context window)
        // still gets its own status code instead of a stream.
        await generate(emit, signal, () => {
          emit({ type: 'response.created', response: structuredClone(response) });
          emit({ type: 'response.in_progress', response: structuredClone(response) });
        });
      },
      { signal: c.req.raw.signal, errorBody: (error) => errorBody(error, c.get('requestId')), doneFrame: false },
    );
    return served.label(stream);
  };
}

/**
 * `GET /v1/responses/{id}`: a kept response of the caller's key, as it stands (a background one while it runs); with
 * `stream=true`, a background response's events (see background.ts).
 */
export function retrieveResponse(deps: RouteDeps) {
  return async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const owner = c.get('key').id;
    const kept = await ownResponse(deps.responses, owner, id);
    if (!kept) throw responseNotFound(id);
    if (c.req.query('stream') === 'true') return streamResponse(deps, c, kept.response);
    return c.json<Response>(await currentResponse(deps, owner, kept));
  };
}

/** `GET /v1/responses/{id}/input_items`: the conversation a kept response of the caller's key answered, a page. */
export function listInputItems({ responses }: RouteDeps) {
  return async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const query = readListQuery(c.req.url, ITEM_LIST);
    const kept = await ownResponse(responses, c.get('key').id, id);
    if (!kept) throw responseNotFound(id);
    return c.json(itemPage(inputItemsOf(kept), query));
  };
}

/**
 * `DELETE /v1/responses/{id}`: forgets a kept response of the caller's key. A background one still running is stopped
 * first: its run would otherwise keep it again when it ends.
 */
export function deleteResponse({ responses, background }: RouteDeps) {
  return async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const owner = c.get('key').id;
    await stopRun(background, owner, id);
    if (!(await responses.delete(owner, id))) throw responseNotFound(id);
    return c.json<ResponseDeleted>({ id, object: 'response.deleted', deleted: true });
  };
}

/** A response in progress: what `response.created` shows, and what the finished response is made from. */
function inProgress(id: string, createdAt: number, params: ResponsesParams): Response {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    completed_at: null,
    background: params.background,
    error: null,
    incomplete_details: null,
    instructions: params.instructions,
    model: params.model,
    output: [],
    output_text: '',
    previous_response_id: params.previousResponseId,
    conversation: params.conversationId === null ? null : { id: params.conversationId },
    service_tier: 'default',
    store: params.store,
    truncation: 'disabled',
    usage: null,
    ...params.settings,
  };
}

/** A failure's error body as the response's `error`, in the Responses API's codes. */
function toResponseError({ error }: ErrorBody): ResponseError {
  const code =
    error.type === 'invalid_request_error'
      ? 'invalid_prompt'
      : error.type === 'requests'
        ? 'rate_limit_exceeded'
        : 'server_error';
  return { code, message: error.message };
}
