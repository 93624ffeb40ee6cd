import * as z from 'zod';
import { BATCH_ENDPOINTS } from '../../batches/index.ts';
import { optional } from '../request-validation.ts';

/*
 * The body of `POST /v1/batches`, with OpenAI's bounds: 16 metadata pairs (keys of 64 characters, values of 512), a
 * `24h` window, output files expiring an hour to 30 days after they are written.
 */

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'At most 16 metadata pairs are allowed.');

export const createBatchSchema = z.object({
  input_file_id: z.string().min(1),
  endpoint: z.string().refine((endpoint) => (BATCH_ENDPOINTS as readonly string[]).includes(endpoint), {
    message: `Invalid 'endpoint': batches here run ${BATCH_ENDPOINTS.join(', ')}.`,
  }),
  completion_window: z.literal('24h'),
  metadata: optional(metadata),
  output_expires_after: optional(
    z.object({ anchor: z.literal('created_at'), seconds: z.int().min(3600).max(2_592_000) }),
  ),
});
