/**
 * Every embedding of an index's chunks, unit length, one after another in a single Float32Array, each row labelled
 * with the chunk (by slot number) it belongs to. Brute force is exact, and at 10,000 chunks of 384 dimensions one query
 * is 3.8 million multiply-adds over 15 MB of contiguous memory: about 6 ms in Node. An approximate index (HNSW) would
 * save little at that size, and cost a build on every restart, parameters to tune and lost recall.
 */

/** Rows the matrix starts with room for; it doubles when full. */
const INITIAL_ROWS = 64;

export class VectorMatrix {
  /** The width of every row: fixed by the first vector added, since vectors of another width come from another model. */
  #dimensions = 0;
  #rows = 0;
  #data = new Float32Array(0);
  /** For each row, the slot of the chunk it belongs to. */
  #slots = new Int32Array(0);

  get dimensions(): number {
    return this.#dimensions;
  }

  get rows(): number {
    return this.#rows;
  }

  /**
   * Throws a RangeError unless every vector can join the matrix: the width of the others, and not all zeros (a zero
   * vector has no direction, so no cosine). Checked before {@link append}, so that a bad batch changes nothing: pass
   * the width the previous call returned to check a batch of several chunks' vectors as one.
   */
  check(vectors: readonly Float32Array[], what: string, width = this.#dimensions): number {
    for (const vector of vectors) {
      if (width === 0) width = vector.length;
      if (vector.length !== width || width === 0) {
        throw new RangeError(`${what} has ${vector.length} dimensions where the index's vectors have ${width}.`);
      }
      const length = norm(vector);
      if (!(Number.isFinite(length) && length > 0)) {
        throw new RangeError(`${what} has a vector of zero or non-finite length.`);
      }
    }
    return width;
  }

  /** Adds a chunk's vectors, scaled to unit length, and returns the rows they take. */
  append(slot: number, vectors: readonly Float32Array[]): number[] {
    const rows: number[] = [];
    for (const vector of vectors) {
      if (this.#dimensions === 0) this.#dimensions = vector.length;
      this.#reserve(this.#rows + 1);
      const row = this.#rows++;
      const scale = 1 / norm(vector);
      const offset = row * this.#dimensions;
      for (let i = 0; i < vector.length; i++) this.#data[offset + i] = vector[i]! * scale;
      this.#slots[row] = slot;
      rows.push(row);
    }
    return rows;
  }

  /**
   * Removes a row by moving the last row into its place, and returns the slot of the chunk whose row moved (so that
   * its owner can update its list of rows), or -1 when the removed row was the last.
   */
  removeRow(row: number): number {
    const last = --this.#rows;
    if (row === last) return -1;
    const width = this.#dimensions;
    this.#data.copyWithin(row * width, last * width, (last + 1) * width);
    this.#slots[row] = this.#slots[last]!;
    return this.#slots[row];
  }

  /** Relabels every row of one slot as another, when chunks change slots. */
  relabel(rows: readonly number[], slot: number): void {
    for (const row of rows) this.#slots[row] = slot;
  }

  /**
   * For each chunk slot, the best cosine similarity between the query and any of the chunk's rows, written into
   * `best` (which the caller fills with -Infinity: a slot with no rows keeps it).
   */
  bestSimilarities(query: Float32Array, best: Float32Array): void {
    const width = this.#dimensions;
    const unit = new Float32Array(width);
    const scale = 1 / norm(query);
    for (let i = 0; i < width; i++) unit[i] = query[i]! * scale;
    const data = this.#data;
    // Four running sums: independent additions keep the CPU's pipeline fuller (a quarter faster than one sum in V8).
    const four = width - (width % 4);
    for (let row = 0, offset = 0; row < this.#rows; row++, offset += width) {
      let a = 0;
      let b = 0;
      let c = 0;
      let d = 0;
      let i = 0;
      for (; i < four; i += 4) {
        a += data[offset + i]! * unit[i]!;
        b += data[offset + i + 1]! * unit[i + 1]!;
        c += data[offset + i + 2]! * unit[i + 2]!;
        d += data[offset + i + 3]! * unit[i + 3]!;
      }
      for (; i < width; i++) a += data[offset + i]! * unit[i]!;
      const dot = a + b + c + d;
      const slot = this.#slots[row]!;
      if (dot > best[slot]!) best[slot] = dot;
    }
  }

  /** Drops every row and forgets the width, so that an emptied index takes vectors of any model again. */
  clear(): void {
    this.#dimensions = 0;
    this.#rows = 0;
    this.#data = new Float32Array(0);
    this.#slots = new Int32Array(0);
  }

  #reserve(rows: number): void {
    if (rows * this.#dimensions <= this.#data.length) return;
    const capacity = Math.max(INITIAL_ROWS, this.#slots.length * 2, rows);
    const data = new Float32Array(capacity * this.#dimensions);
    data.set(this.#data.subarray(0, this.#rows * this.#dimensions));
    const slots = new Int32Array(capacity);
    slots.set(this.#slots.subarray(0, this.#rows));
    this.#data = data;
    this.#slots = slots;
  }
}

/** A vector's Euclidean length. */
export function norm(vector: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}
