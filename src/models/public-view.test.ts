import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { candidateKey, type ModelCandidate, type ModelProfile } from './model-profile.ts';
import { PublicView } from './public-view.ts';

const server: ModelCandidate = {
  engine: 'remote',
  baseURL: 'https://alice:s3cret-pass@llm.internal:8443/team/v1?api_key=qk-123456',
  model: 'qwen-private',
  apiKey: 'sk-abcdef123456',
  headers: { 'x-gateway-token': 'gw-987654321' },
};
const other: ModelCandidate = { engine: 'remote', baseURL: 'http://10.0.0.5:8000/v1', model: 'llama' };
const folder: ModelCandidate = { engine: 'transformers', model: '/srv/models/tiny-chat', dtype: 'q4', device: 'cpu' };
const hub: ModelCandidate = { engine: 'transformers', model: 'onnx-community/Qwen3-0.6B-ONNX', device: 'webgpu' };
const profile: ModelProfile = {
  chat: { task: 'chat', created: 0, candidates: [folder, hub, server, other] },
  again: { task: 'chat', created: 0, candidates: [other] },
};
const view = new PublicView(profile);

describe('the public view of a profile', () => {
  it('names servers by number, in the order the profile first lists them, and local models by what they are', () => {
    expect([folder, hub, server, other].map((c) => view.name(candidateKey(c)))).toEqual([
      'transformers:tiny-chat@q4/cpu',
      'transformers:onnx-community/Qwen3-0.6B-ONNX@default/webgpu',
      'remote:1',
      'remote:2',
    ]);
    // A key of a profile since changed: a server is only `remote`.
    expect(view.name('remote:gone@http://10.9.9.9/v1')).toBe('remote');
  });

  it('cleans what a server echoes: its URL becomes its name, credentials and queries go', () => {
    const said =
      'POST https://alice:s3cret-pass@llm.internal:8443/team/v1/chat/completions?api_key=qk-123456 refused ' +
      'Bearer sk-abcdef123456 (x-gateway-token: gw-987654321); also see http://bob:pw@elsewhere.example/x?token=t';
    const text = view.text(said);
    expect(text).toBe(
      'POST remote:1/chat/completions?[redacted] refused Bearer [redacted] (x-gateway-token: [redacted]); also see ' +
        'http://elsewhere.example/x?[redacted]',
    );
  });

  it("stands a server's public name for its name for the model where a message quotes it, and only there", () => {
    expect(view.text("model 'qwen-private' not found; qwen-private-2 is")).toBe(
      "model 'remote:1' not found; qwen-private-2 is",
    );
  });

  it('cuts absolute paths only where asked (a local failure), leaving JSON pointers of a request alone', () => {
    const failure = 'Could not load "/srv/models/tiny-chat/onnx/model.onnx" (cache at /home/op/.cache/x/y.bin)';
    expect(view.text(failure, { paths: true })).toBe('Could not load "tiny-chat/onnx/model.onnx" (cache at y.bin)');
    const pointer = 'response_format: /properties/city/enum is too large';
    expect(view.text(pointer)).toBe(pointer);
  });

  it('an error: its message, param and backend public, the original as its cause, with no secret left in it', () => {
    const original = new EngineError(
      'upstream_unavailable',
      `The model server (${candidateKey(server)}) could not be reached (https://alice:s3cret-pass@llm.internal:8443/team/v1?api_key=qk-123456).`,
      { backend: candidateKey(server), retry: true, cause: new TypeError('bad url: sk-abcdef123456') },
    );
    const shown = view.error(original);
    expect(shown).toMatchObject({ kind: 'upstream_unavailable', retry: true, backend: 'remote:1' });
    expect(shown.message).toBe('The model server (remote:1) could not be reached (remote:1?[redacted]).');
    expect(shown.cause).toBe(original);
    // The operator's copy keeps the location, never the secrets.
    expect(original.message).toContain('llm.internal');
    expect(`${original.message} ${original.stack} ${String(original.cause)}`).not.toMatch(
      /s3cret-pass|qk-123456|sk-abcdef123456/,
    );
    // Nothing to clean: the same error.
    const plain = new EngineError('aborted', 'The request was cancelled by the client.');
    expect(view.error(plain)).toBe(plain);
  });
});
