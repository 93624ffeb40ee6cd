import { DynamicCache, Tensor } from '@huggingface/transformers';

/** A typed array holding a tensor's elements (Float32Array, or Uint16Array for float16). */
type Elements = Float32Array | Uint16Array;

/**
 * The keys and values of every row of a running batch, as one set of tensors `past_key_values.<layer>.{key,value}` of
 * shape `[rows, heads, width, head_dim]`, with a mask per row saying which of the `width` columns hold the row's own
 * tokens; and, on a hybrid or recurrent model, its per-row states beside them (`past_conv.*`, `past_ssm.*`,
 * `past_recurrent.*`: `[rows, …]`, one state of the whole sequence so far, with no sequence axis: see isKeyValue).
 * A state is copied whole with its row. It takes in every token fed, pads too, so rows of a model with states always
 * feed the same number of tokens in a step (the decode loop runs such a model one request at a time, without
 * jump-forward beside other rows: TransformersBatch.mixesLengths), and are never padded, nor retracted. Rows differ in length: a shorter row is padded on the left, and a row that fed fewer tokens in a step than
 * another (a row jumping forward feeds several) leaves masked columns inside. The model never sees a padded query
 * position it has to attend from with nothing to attend to: pads only ever sit in the past (see `stepInputs`), where
 * the attention mask hides them.
 *
 * Each step the model returns the keys and values of every column plus the new ones (`present.*`), which become the
 * batch's tensors as they are (in GPU buffers on WebGPU): a step copies nothing. Rows join and leave through
 * `relayout`, which builds new tensors holding exactly the rows kept and added, each row's own columns packed to the
 * right; it reads GPU tensors back first. A batch of one row that was never laid out is the model's own tensors.
 */
export class KVBatch {
  #tensors: Record<string, Tensor> = {};
  /** Per row, per column: 1 where the column holds one of the row's tokens. */
  #masks: Uint8Array[] = [];
  #width = 0;
  /** Per row: how many tokens its columns hold (the position of its next token). */
  #lengths: number[] = [];

  get rows(): number {
    return this.#masks.length;
  }

  /** Columns, the longest row's padding and holes included. */
  get width(): number {
    return this.#width;
  }

  /** How many tokens row `row` holds. */
  length(row: number): number {
    return this.#lengths[row]!;
  }

  /** Columns that hold no token of their row, over every row: what relayout would free. */
  get waste(): number {
    return this.#lengths.reduce((sum, length) => sum + this.#width - length, 0);
  }

  /**
   * The model's inputs for a step in which row `i` feeds `tokens[i]` (at least one each). A row that feeds fewer
   * tokens than the step's longest is padded on the right with token 0, whose positions are masked for every later
   * query: it attends from there (to its own real columns, so never from nothing), and what it writes is never read.
   */
  stepInputs(tokens: readonly (readonly number[])[]): {
    input_ids: Tensor;
    attention_mask: Tensor;
    position_ids: Tensor;
    past_key_values: DynamicCache;
  } {
    const rows = tokens.length;
    if (rows !== this.rows) throw new Error(`A step of ${rows} rows on a batch of ${this.rows}.`);
    const query = Math.max(...tokens.map((t) => t.length));
    // A state would take in the padding of a shorter row as if it were a token: refused rather than wrong.
    if (tokens.some((t) => t.length !== query) && Object.entries(this.#tensors).some(([n, t]) => !isKeyValue(n, t)))
      throw new Error('Rows of a model with recurrent or convolution states fed different numbers of tokens.');
    const width = this.#width + query;
    const ids = new BigInt64Array(rows * query);
    const positions = new BigInt64Array(rows * query);
    const mask = new BigInt64Array(rows * width);
    for (let r = 0; r < rows; r++) {
      const row = tokens[r]!;
      const start = this.#lengths[r]!;
      for (let j = 0; j < query; j++) {
        ids[r * query + j] = BigInt(row[j] ?? 0);
        positions[r * query + j] = BigInt(start + j);
      }
      const own = this.#masks[r]!;
      for (let c = 0; c < this.#width; c++) mask[r * width + c] = BigInt(own[c]!);
      for (let j = 0; j < row.length; j++) mask[r * width + this.#width + j] = 1n;
    }
    return {
      input_ids: new Tensor('int64', ids, [rows, query]),
      attention_mask: new Tensor('int64', mask, [rows, width]),
      position_ids: new Tensor('int64', positions, [rows, query]),
      // A fresh cache object over the same tensors: the model adds its inputs from it and keeps nothing.
      past_key_values: new DynamicCache({ ...this.#tensors }),
    };
  }

  /**
   * After a step: its keys and values (`pastOf` its outputs) become the batch's tensors, and the old ones are freed.
   * `fed[i]` is how many real tokens row `i` fed (the step's query length minus its right padding).
   */
  advance(next: Record<string, Tensor>, fed: readonly number[]): void {
    const query = Math.max(...fed);
    this.#replace(next);
    this.#width += query;
    this.#masks = this.#masks.map((own, r) => {
      const grown = new Uint8Array(this.#width);
      grown.set(own);
      grown.fill(1, own.length, own.length + fed[r]!);
      return grown;
    });
    this.#lengths = this.#lengths.map((length, r) => length + fed[r]!);
  }

  /**
   * Row `row`'s last `count` tokens leave it (speculated tokens the model did not accept): their columns are masked,
   * holes from then on, and its next token takes the position of the first of them.
   */
  retract(row: number, count: number): void {
    const own = this.#masks[row]!;
    let left = count;
    for (let c = own.length - 1; c >= 0 && left > 0; c--) {
      if (own[c]) {
        own[c] = 0;
        left -= 1;
      }
    }
    this.#lengths[row] = this.#lengths[row]! - (count - left);
  }

  /**
   * Takes a one-row cache holding `length` tokens, all its own, as the whole batch (an empty one): its tensors, not a
   * copy.
   */
  adopt(cache: DynamicCache, length: number): void {
    if (this.rows > 0) throw new Error('Only an empty batch adopts a cache.');
    this.#replace({ ...cache } as Record<string, Tensor>);
    this.#width = length;
    this.#lengths = [length];
    this.#masks = [new Uint8Array(length).fill(1)];
  }

  /**
   * A new layout: the rows `keep` of this batch, in that order, then each of `added` (a one-row cache of `length`
   * tokens, all its own) repeated `copies` times. Each row's own columns are packed to the right of the new width,
   * which is the longest row's length; each row's states go with it. The added caches are the caller's still (free
   * them after).
   */
  async relayout(
    keep: readonly number[],
    added: readonly { cache: DynamicCache; length: number; copies: number }[] = [],
  ): Promise<void> {
    const sources: { tensors: Record<string, Tensor>; row: number; columns: number[] }[] = keep.map((row) => ({
      tensors: this.#tensors,
      row,
      columns: ownColumns(this.#masks[row]!),
    }));
    for (const { cache, length, copies } of added) {
      const tensors = { ...cache } as Record<string, Tensor>;
      const columns = Array.from({ length }, (_, i) => i);
      for (let c = 0; c < copies; c++) sources.push({ tensors, row: 0, columns });
    }
    const width = Math.max(0, ...sources.map((s) => s.columns.length));
    const next = await gatherRows(sources, width);
    this.#replace(next);
    this.#width = width;
    this.#lengths = sources.map((s) => s.columns.length);
    this.#masks = this.#lengths.map((length) => {
      const mask = new Uint8Array(width);
      mask.fill(1, width - length);
      return mask;
    });
  }

  /**
   * Row `row`'s own columns (and states) as a cache of one row (for prefix reuse). A batch of one row with no padding or hole
   * hands over its tensors themselves and is left empty; otherwise they are copied.
   */
  async takeRow(row: number): Promise<DynamicCache> {
    if (this.rows === 1 && this.#lengths[0] === this.#width) {
      const whole = new DynamicCache(this.#tensors);
      this.#tensors = {};
      this.#clear();
      return whole;
    }
    const copy = await gatherRows([{ tensors: this.#tensors, row, columns: ownColumns(this.#masks[row]!) }], undefined);
    return new DynamicCache(copy);
  }

  /** Frees every tensor and forgets every row. */
  dispose(): void {
    this.#replace({});
    this.#clear();
  }

  #clear(): void {
    this.#masks = [];
    this.#lengths = [];
    this.#width = 0;
  }

  /** Takes `next` as the batch's tensors and frees those it replaces. */
  #replace(next: Record<string, Tensor>): void {
    disposeReplaced(this.#tensors, next);
    this.#tensors = next;
  }
}

/**
 * A forward pass's cache as the next pass takes it: its `present.*` outputs renamed as transformers.js does it
 * (`getPastKeyValues`): keys and values `present.<layer>.{key,value}` to `past_key_values.*`, a state
 * `present_<kind>.*` (`conv`: LFM2's and Qwen3.5's short convolutions, `ssm`: Mamba's, `recurrent`: Gated DeltaNet's)
 * to `past_<kind>.*`.
 */
export function pastOf(outputs: Record<string, Tensor>): Record<string, Tensor> {
  const past: Record<string, Tensor> = {};
  for (const [name, tensor] of Object.entries(outputs)) {
    if (name.startsWith('present_')) past[name.replace('present_', 'past_')] = tensor;
    else if (name.startsWith('present')) past[name.replace('present', 'past_key_values')] = tensor;
  }
  return past;
}

/**
 * Whether a cache tensor is attention keys or values, `[rows, heads, sequence, head_dim]`, whose positions can be
 * taken apart (each depends on the tokens before it only); any other is a row's state of the whole sequence so far
 * (`[rows, …]`), which is copied whole or not at all.
 */
export function isKeyValue(name: string, tensor: Tensor): boolean {
  return name.startsWith('past_key_values.') && tensor.dims.length === 4;
}

/**
 * Whether a model's cache holds states beside (or instead of) attention keys and values: a hybrid (LFM2, Qwen3.5,
 * Granite 4.0-H, Falcon-H1) or recurrent model. Read once from its decoder's inputs: every cache input other than
 * `past_key_values.*` is a state.
 */
export function hasStates(model: {
  sessions?: Record<string, { inputNames?: readonly string[] } | undefined>;
}): boolean {
  const sessions = model.sessions ?? {};
  const decoder = sessions['decoder_model_merged'] ?? sessions['model'];
  return (decoder?.inputNames ?? []).some((name) => name.startsWith('past_') && !name.startsWith('past_key_values.'));
}

/** Frees the tensors of `old` that `next` does not hold: GPU buffers at once, CPU data to the garbage collector. */
export function disposeReplaced(old: Record<string, Tensor>, next: Record<string, Tensor>): void {
  const kept = new Set(Object.values(next));
  for (const tensor of Object.values(old)) if (!kept.has(tensor)) tensor.dispose();
}

/** The indices of a row's own columns, in order. */
function ownColumns(mask: Uint8Array): number[] {
  const columns: number[] = [];
  for (let c = 0; c < mask.length; c++) if (mask[c]) columns.push(c);
  return columns;
}

/**
 * New CPU tensors of `sources.length` rows and `width` columns (default: the first source's length), each row the
 * given columns of one row of a source's keys and values, packed to the right, and that row's states whole. GPU
 * tensors are read back once each.
 */
async function gatherRows(
  sources: readonly { tensors: Record<string, Tensor>; row: number; columns: readonly number[] }[],
  width: number | undefined,
): Promise<Record<string, Tensor>> {
  const out: Record<string, Tensor> = {};
  if (sources.length === 0) return out;
  const cols = width ?? sources[0]!.columns.length;
  const read = new Map<Tensor, Promise<Elements>>();
  const elements = (tensor: Tensor) => {
    let data = read.get(tensor);
    if (!data) {
      data = (
        tensor.location === 'gpu-buffer' ? tensor.ort_tensor.getData() : Promise.resolve(tensor.data)
      ) as Promise<Elements>;
      read.set(tensor, data);
    }
    return data;
  };
  for (const name of Object.keys(sources[0]!.tensors)) {
    const first = sources[0]!.tensors[name]!;
    if (!isKeyValue(name, first)) {
      out[name] = await gatherStates(sources, name, elements);
      continue;
    }
    const [, heads, , dim] = first.dims as [number, number, number, number];
    const sample = await elements(first);
    const data = new (sample.constructor as Float32ArrayConstructor)(sources.length * heads * cols * dim);
    for (const [r, source] of sources.entries()) {
      const tensor = source.tensors[name]!;
      const from = await elements(tensor);
      const [rows, , sequence] = tensor.dims as [number, number, number, number];
      if (source.row >= rows) throw new Error(`Row ${source.row} is not in a batch of ${rows}.`);
      const pad = cols - source.columns.length;
      for (let h = 0; h < heads; h++) {
        const src = (source.row * heads + h) * sequence * dim;
        const dst = ((r * heads + h) * cols + pad) * dim;
        copyColumns(from, src, data, dst, source.columns, dim);
      }
    }
    out[name] = new Tensor(first.type, data, [sources.length, heads, cols, dim]);
  }
  return out;
}

/** A state tensor of `sources.length` rows, each a source's row of it whole. */
async function gatherStates(
  sources: readonly { tensors: Record<string, Tensor>; row: number }[],
  name: string,
  elements: (tensor: Tensor) => Promise<Elements>,
): Promise<Tensor> {
  const first = sources[0]!.tensors[name]!;
  const [, ...shape] = first.dims;
  const size = shape.reduce((a, b) => a * b, 1);
  const sample = await elements(first);
  const data = new (sample.constructor as Float32ArrayConstructor)(sources.length * size);
  for (const [r, source] of sources.entries()) {
    const tensor = source.tensors[name];
    if (!tensor) throw new Error(`A cache without ${name} beside one with it.`);
    const [rows] = tensor.dims as [number];
    if (source.row >= rows) throw new Error(`Row ${source.row} is not in a batch of ${rows}.`);
    const from = await elements(tensor);
    data.set(from.subarray(source.row * size, (source.row + 1) * size), r * size);
  }
  return new Tensor(first.type, data, [sources.length, ...shape]);
}

/** Copies the given columns (each `dim` elements) from `from` at `src` to `to` at `dst`, runs of columns at once. */
function copyColumns(from: Elements, src: number, to: Elements, dst: number, columns: readonly number[], dim: number) {
  let i = 0;
  while (i < columns.length) {
    let end = i + 1;
    while (end < columns.length && columns[end] === columns[end - 1]! + 1) end++;
    const start = src + columns[i]! * dim;
    to.set(from.subarray(start, start + (end - i) * dim), dst + i * dim);
    i = end;
  }
}
