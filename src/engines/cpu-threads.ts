/**
 * The threads a CPU engine in Node computes one model with when its candidate names none: half the cores. llama.cpp's
 * and onnxruntime's threads spin while they wait for each other, so as many threads as cores starve whatever else the
 * machine runs (the server's other model, a test's other fork): on 2 vCPUs, 200 tokens of stories260K took 111 s with
 * node-llama-cpp's default and 113 ms with one thread; four onnxruntime-heavy test files side by side took 125 s with
 * onnxruntime's default and 74 s with one (docs/tests.md). Half the logical cores is the physical cores of most
 * servers, where it changes little.
 */
export const defaultCpuThreads = (): number =>
  Math.max(1, Math.floor(process.getBuiltinModule('node:os').availableParallelism() / 2));
