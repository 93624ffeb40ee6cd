import { readFileSync } from 'node:fs';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../../test/support/lantern.ts';
import { chatRequest } from '../../test/support/chat-request.ts';
import { toolConstraint } from '../../test/support/tools.ts';
import type { ChatMessage, ChatRequest, ToolDefinition } from '../engine-interface/index.ts';
import { HERMES, LLAMA3_JSON, toolFormatOf, type ToolFormat } from './tool-call-syntax.ts';
import { toolPrompt } from './tool-prompt.ts';

/**
 * Tools through the registry's real chat templates (test/fixtures/chat-templates), rendered by transformers.js as the
 * engine renders them: Qwen2.5's and Llama 3.2's own tool support, and the generic format on a template without any.
 */
const template = (name: string) => readFileSync(`test/fixtures/chat-templates/${name}.jinja`, 'utf8');
const QWEN = template('qwen2.5-instruct');
const LLAMA = template('llama-3.2-instruct');
const SMOLLM2 = template('smollm2-instruct');

let tokenizer: PreTrainedTokenizer;
beforeAll(async () => {
  tokenizer = await AutoTokenizer.from_pretrained(`${BUNDLED_MODELS}/tiny-chat`);
});

const weather: ToolDefinition = {
  name: 'get_weather',
  description: 'Get the weather.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: true,
};
const loop: ChatMessage[] = [
  { role: 'system', content: 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' },
  { role: 'user', content: 'Weather in Paris and Oslo?' },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'call_2', name: 'get_weather', arguments: '{"city": "Oslo"}' },
    ],
  },
  { role: 'tool', content: '{"temperature": 18}', toolCallId: 'call_1' },
  { role: 'tool', content: '{"temperature": 5}', toolCallId: 'call_2' },
];
const request = (extra: Partial<ChatRequest> = {}): ChatRequest =>
  chatRequest({ messages: loop, constraint: toolConstraint([weather]), ...extra });

/** The request with `tool_choice: "none"`: the API sends no tool constraint. */
const none = () => request({ constraint: undefined });

/** What the engine renders for `req` on a model with `chatTemplate`. */
function render(chatTemplate: string, req: ChatRequest, format: ToolFormat = toolFormatOf(chatTemplate)) {
  const prompt = toolPrompt(req, format);
  return tokenizer.apply_chat_template(prompt.messages as { role: string; content: string }[], {
    chat_template: chatTemplate,
    tokenize: false,
    add_generation_prompt: true,
    ...(prompt.tools && { tools: prompt.tools }),
  }) as string;
}

describe('tool formats of the registry templates', () => {
  it('recognises Qwen2.5 (Hermes) and Llama 3.2 (JSON) templates; others get the generic format', () => {
    expect(toolFormatOf(QWEN)).toEqual({ mode: 'template', syntax: HERMES });
    expect(toolFormatOf(LLAMA)).toEqual({ mode: 'template', syntax: LLAMA3_JSON });
    expect(toolFormatOf(SMOLLM2)).toEqual({ mode: 'generic', syntax: HERMES });
    // Qwen3.5's template writes its calls as XML inside <tool_call> (its own template, in part): not Hermes.
    const qwen35 =
      "{%- if tools %}{{- '<tools>' }}{%- endif %}{%- if message.tool_calls %}{{- '<tool_call>\\n<function=' + " +
      "tool_call.name + '>\\n' }}{%- for args_name, args_value in tool_call.arguments|items %}" +
      "{{- '<parameter=' + args_name + '>\\n' }}{%- endfor %}{%- endif %}";
    expect(toolFormatOf(qwen35)).toEqual({ mode: 'generic', syntax: HERMES });
    expect(toolFormatOf(undefined)).toEqual({ mode: 'generic', syntax: HERMES });
  });

  it.skipIf(!HAS_STORIES_260K)('gives stories260K, whose template knows no tools, the generic format', async () => {
    const stories = await AutoTokenizer.from_pretrained(STORIES_260K);
    expect(toolFormatOf(stories.get_chat_template({ tools: [] }) as string).mode).toBe('generic');
  });

  it("renders a parallel tool loop through Qwen2.5's own template", () => {
    expect(render(QWEN, request())).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n' +
        'You may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.", "parameters": ' +
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>\n\n' +
        'For each function call, return a json object with function name and arguments within ' +
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n' +
        '</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWeather in Paris and Oslo?<|im_end|>\n' +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n{"temperature": 18}\n</tool_response>\n' +
        '<tool_response>\n{"temperature": 5}\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it("writes the generic format exactly as Qwen2.5's template does, through a template without tools", () => {
    expect(render(SMOLLM2, request())).toBe(render(QWEN, request()));
  });

  it('renders tools in the first user turn of Llama 3.2, one call per assistant turn, results as ipython', () => {
    const text = render(LLAMA, request({ messages: loop.slice(1) }));
    expect(text).toContain('Environment: ipython\n');
    expect(text).toContain(
      'Given the following functions, please respond with a JSON for a function call with its proper arguments',
    );
    expect(text).toContain('"name": "get_weather"');
    // Its template raises on two calls in one turn: each went in its own.
    expect(text).toContain(
      '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>' +
        '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>',
    );
    expect(text).toContain('<|start_header_id|>ipython<|end_header_id|>\n\n');
    expect(text.endsWith('<|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
  });

  it('shows no tools with tool_choice "none", and still renders the calls and results of the history', () => {
    const rendered = render(QWEN, none());
    expect(rendered).not.toContain('# Tools');
    expect(rendered).toContain('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>');
    expect(rendered).toContain('<tool_response>\n{"temperature": 5}\n</tool_response>');
    expect(toolPrompt(none(), toolFormatOf(QWEN)).calls).toBeUndefined();
    expect(render(SMOLLM2, none())).not.toContain('# Tools');
  });

  it('reads calls in the family syntax, of the declared functions, one at a time without parallel calls', () => {
    const calls = toolPrompt(
      request({ constraint: toolConstraint([weather], { parallel: false }) }),
      toolFormatOf(LLAMA),
    ).calls!;
    expect(calls.syntax).toBe(LLAMA3_JSON);
    expect([...calls.names]).toEqual(['get_weather']);
    expect(calls.maxCalls).toBe(1);
  });
});

describe('a turn with images', () => {
  const image = { url: 'data:image/png;base64,AA==', detail: 'auto' as const, param: 'messages[0].content[1]' };
  const messages: ChatMessage[] = [
    {
      role: 'user',
      content: 'What is this? And this?',
      images: [
        { ...image, at: 13 },
        { ...image, at: 23 },
      ],
    },
  ];
  const request = { messages, n: 1 } as ChatRequest;

  it("goes to a template as parts in the client's order, in either format; a turn of text stays text", () => {
    for (const format of [toolFormatOf('{{ tools }} <tool_call>'), toolFormatOf(undefined)]) {
      expect(toolPrompt(request, format).messages).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', image: messages[0]!.images![0] },
            { type: 'text', text: ' And this?' },
            { type: 'image', image: messages[0]!.images![1] },
          ],
        },
      ]);
    }
    const plain = { ...request, messages: [{ role: 'user' as const, content: 'Hi' }] };
    expect(toolPrompt(plain, toolFormatOf(undefined)).messages).toEqual([{ role: 'user', content: 'Hi' }]);
  });
});
