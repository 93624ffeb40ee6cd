import type { Context } from 'hono';
import { modelNotFound, type ModelCard } from '../../engine-interface/index.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import type { Model, ModelList } from './wire.ts';

const toModel = (card: ModelCard, ownedBy: string): Model => ({
  id: card.id,
  object: 'model',
  created: card.created,
  owned_by: ownedBy,
  ...(card.inputs && { input_modalities: card.inputs }),
  ...(card.outputs && { output_modalities: card.outputs }),
  ...(card.voices && { voices: card.voices }),
  ...(card.candidates && { candidates: card.candidates }),
  ...(card.servedBy !== undefined && { served_by: card.servedBy }),
  ...(card.stored && { stored: card.stored }),
  ...(card.runsOn && { runs_on: card.runsOn }),
});

/** `GET /v1/models`: the models this device can serve now, by their IDs (not their aliases). */
export function listModels({ engine, ownedBy }: RouteDeps) {
  return async (c: Context<Env>) => {
    const cards = await engine.models();
    return c.json<ModelList>({ object: 'list', data: cards.map((card) => toModel(card, ownedBy)) });
  };
}

/** `GET /v1/models/{id}`: one model, by its ID or an alias (answered with its ID), or 404. */
export function retrieveModel({ engine, ownedBy }: RouteDeps) {
  return async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const cards = await engine.models();
    const card = cards.find((m) => m.id === id) ?? cards.find((m) => m.aliases?.includes(id));
    if (!card) throw modelNotFound(id);
    return c.json<Model>(toModel(card, ownedBy));
  };
}
