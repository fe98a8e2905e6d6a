/* ox_passes.c - the registry of built-in passes, in the spec's default order (pre-grad
 * section 2.1, then post-grad section 2.2). Each entry names the function that implements
 * it; the pipeline (ox_driver.c) picks entries by phase, config or --passes. */
#include "ox_pass.h"

static const OxPassInfo passes[] = {
  /* entries are added here as the batch (ox_batch.c) and pattern (ox_splitcat.c) engines
   * implement them */
  {NULL, OX_PHASE_PRE, OX_ENGINE_BATCH, NULL, NULL},
};

const OxPassInfo *ox_passes(size_t *count) {
  *count = sizeof passes / sizeof passes[0] - 1; /* the last entry terminates the table */
  return passes;
}
