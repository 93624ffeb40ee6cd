import {
  withTaskMethods,
  type Engine,
  type EngineRuns,
  type ModelTask,
  type TaskOptions,
  type TaskRequest,
  type TaskResult,
} from '../../src/engine-interface/index.ts';

/**
 * `engine`, with its calls of one task made by `run` instead (which may call the engine itself), and every other
 * call passed on as it is: for tests and benchmarks that watch or break one task's calls.
 *
 * @example
 * const traced = overrideTask(engine, 'chat', (model, request, options) => engine.chat(model, request, options));
 */
export function overrideTask<K extends ModelTask>(
  engine: EngineRuns,
  task: K,
  run: (model: string, request: TaskRequest<K>, options: TaskOptions<K> | undefined) => Promise<TaskResult<K>>,
): Engine {
  return withTaskMethods({
    models: () => engine.models(),
    run: (called, model, request, options) =>
      called === (task as ModelTask)
        ? (run(model, request as TaskRequest<K>, options as TaskOptions<K>) as never)
        : engine.run(called, model, request, options),
  });
}
