import { readFileSync } from 'node:fs';
import {
  AutoModelForCausalLM,
  AutoTokenizer,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Tensor,
} from '@huggingface/transformers';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODELS, DIRECT } from './support/lantern.ts';

/**
 * The bundled thinking fixture, public/models/tiny-think (scripts/fixtures/generate.py tiny-think): for every case of
 * its reference.json, transformers.js renders the messages with the model's own chat template (Qwen3's) exactly as
 * Python's jinja2 did when the training data was rendered, tokenizes them to the same ids, and generates greedily the
 * same tokens as PyTorch did from the exported ONNX weights.
 */
const folder = `${BUNDLED_MODELS}/tiny-think`;

/** One case of reference.json: messages as chat templates take them (call arguments as objects), and the outputs. */
interface ThinkReference {
  label: string;
  messages: Record<string, unknown>[];
  tools?: Record<string, unknown>[];
  /** `null`: not passed to the template (which then thinks, as Qwen3's does). */
  enable_thinking: boolean | null;
  prompt_text: string;
  input_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
  reasoning: string | null;
  content: string;
  ends_with_eos: boolean;
  /** Whether the reply is the one it was trained to give (the lead's end-to-end tests rely on these). */
  as_trained: boolean;
}
const refs = JSON.parse(readFileSync(`${folder}/reference.json`, 'utf8')) as ThinkReference[];

let tokenizer: PreTrainedTokenizer;
let model: PreTrainedModel;
let eos: number[];

beforeAll(async () => {
  tokenizer = await AutoTokenizer.from_pretrained(folder);
  model = await AutoModelForCausalLM.from_pretrained(folder, DIRECT);
  eos = [(model.generation_config as { eos_token_id: number | number[] }).eos_token_id].flat();
});

const render = (ref: ThinkReference) =>
  tokenizer.apply_chat_template(ref.messages as { role: string; content: string }[], {
    tokenize: false,
    add_generation_prompt: true,
    ...(ref.tools && { tools: ref.tools }),
    ...(ref.enable_thinking !== null && { enable_thinking: ref.enable_thinking }),
  }) as string;

const name = (ref: ThinkReference) =>
  `${ref.label}, thinking ${ref.enable_thinking === false ? 'off' : ref.enable_thinking === null ? 'default' : 'on'}: ` +
  JSON.stringify(ref.messages.at(-1)!.content);

describe('tiny-think: transformers.js against PyTorch', () => {
  it('has its added tokens, not special, and ends on <|im_end|> or <|endoftext|>', () => {
    for (const token of ['<think>', '</think>', '<tool_call>', '</tool_call>']) {
      const ids = tokenizer.encode(token, { add_special_tokens: false });
      expect(ids).toHaveLength(1);
      expect(tokenizer.decode(ids, { skip_special_tokens: true })).toBe(token);
    }
    expect(eos).toEqual(tokenizer.encode('<|im_end|><|endoftext|>', { add_special_tokens: false }));
  });

  it('covers both modes, system prompts, earlier turns, JSON, the tool loop and held-out prompts and tools, mostly as trained', () => {
    const labels = new Set(refs.map((r) => r.label));
    expect([...labels].sort()).toEqual(
      [
        'any tool',
        'held out',
        'json',
        'multi-turn',
        'system prompt',
        'thinking off',
        'thinking on',
        'tool answer',
        'tool call',
      ].sort(),
    );
    expect(refs.filter((r) => r.as_trained).length).toBeGreaterThan(refs.length / 2);
  });

  it.each(refs.map((r) => [name(r), r] as const))('%s', async (_name, ref) => {
    const text = render(ref);
    expect(text).toBe(ref.prompt_text);
    const inputs = tokenizer(text, { add_special_tokens: false }) as { input_ids: Tensor; attention_mask: Tensor };
    const input_ids = (inputs.input_ids.tolist() as bigint[][])[0]!.map(Number);
    expect(input_ids).toEqual(ref.input_ids);

    const output = (await model.generate({
      ...inputs,
      max_new_tokens: ref.greedy_ids.length,
      do_sample: false,
    })) as Tensor;
    const generated = (output.tolist() as bigint[][])[0]!.slice(input_ids.length).map(Number);
    expect(generated).toEqual(ref.greedy_ids);
    expect(eos.includes(generated.at(-1)!)).toBe(ref.ends_with_eos);
    const reply = tokenizer.decode(ref.ends_with_eos ? generated.slice(0, -1) : generated, {
      skip_special_tokens: true,
    });
    expect(reply).toBe(ref.greedy_text);
  });
});
