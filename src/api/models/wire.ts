/** The models wire format (`GET /v1/models`), as openai-node's `Model` has it, with Lantern's own two fields. */

export interface Model {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /** Lantern's own: the candidates that can serve it here, in the order they are tried (`x-lantern-backend` names). */
  candidates?: string[];
  /** Lantern's own: the candidate that answered its last request or, before any, the first in line. */
  served_by?: string | null;
}

export interface ModelList {
  object: 'list';
  data: Model[];
}
