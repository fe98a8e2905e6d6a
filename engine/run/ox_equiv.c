/* ox_equiv.c - two graphs run by the reference interpreter on the same inputs, their outputs
 * compared (ox_equiv.h).
 */
#include "run/ox_equiv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_interp.h"

/* Runs g; returns its interpreter (caller frees) or NULL with err. */
static OxInterp *run(const OxGraph *g, const OxRecord *rec, uint64_t seed, char *err, size_t errcap) {
  if (!ox_graph_output(g)) {
    snprintf(err, errcap, "the graph has no output node");
    return NULL;
  }
  OxInterp *in = ox_interp_new(g, seed);
  if ((rec && ox_record_apply(rec, g, in, err, errcap) != 0) || ox_interp_run(in, NULL, 0, err, errcap) != 0) {
    ox_interp_free(in);
    return NULL;
  }
  return in;
}

/* One pair: the original's value want, the rewritten graph's got. */
static bool compare_one(const OxRtValue *got, const OxRtValue *want, uint32_t i, OxEquivReport *rep) {
  OxRtKind gk = got ? got->kind : OX_RT_NONE, wk = want ? want->kind : OX_RT_NONE;
  if (wk == OX_RT_TENSOR && gk == OX_RT_TENSOR) {
    OxCompare c;
    bool ok = ox_tensor_compare(got->u.t, want->u.t, NULL, &c);
    rep->n_compared++;
    if (c.max_abs > rep->max_abs) rep->max_abs = c.max_abs;
    if (!ok) snprintf(rep->why, sizeof rep->why, "output %u: %s (%lld elements differ)", i, c.why, (long long)c.n_bad);
    return ok;
  }
  if (ox_rt_is_scalar(want) && ox_rt_is_scalar(got)) {
    double a = ox_rt_scalar(got), b = ox_rt_scalar(want), d = fabs(a - b);
    rep->n_compared++;
    if (d > rep->max_abs) rep->max_abs = d;
    if (d <= 1e-6 * (1 + fabs(b)) || (isnan(a) && isnan(b))) return true;
    snprintf(rep->why, sizeof rep->why, "output %u: %g vs %g", i, a, b);
    return false;
  }
  if (gk == wk && (wk == OX_RT_NONE || wk == OX_RT_STR || wk == OX_RT_OPAQUE || wk == OX_RT_DTYPE)) return true;
  snprintf(rep->why, sizeof rep->why, "output %u: %s where the original has %s", i, ox_rt_kind_name(gk),
           ox_rt_kind_name(wk));
  return false;
}

int ox_equiv_outputs(const OxGraph *ref, const OxGraph *g, const OxRecord *rec, uint64_t seed, OxEquivReport *rep,
                     char *err, size_t errcap) {
  memset(rep, 0, sizeof *rep);
  if (errcap) err[0] = 0;
  OxInterp *a = run(ref, rec, seed, err, errcap);
  if (!a) return -1;
  char why[200];
  OxInterp *b = run(g, rec, seed, why, sizeof why);
  if (!b) {
    snprintf(rep->why, sizeof rep->why, "the graph does not run: %s", why);
    ox_interp_free(a);
    return 0;
  }
  OxRtFlat fa = {0}, fb = {0};
  ox_rt_flatten(ox_interp_value(a, ox_graph_output(ref)), &fa);
  ox_rt_flatten(ox_interp_value(b, ox_graph_output(g)), &fb);
  rep->n_outputs = fa.n;
  rep->pass = fa.n == fb.n;
  if (!rep->pass) snprintf(rep->why, sizeof rep->why, "%u outputs where the original has %u", fb.n, fa.n);
  for (uint32_t i = 0; rep->pass && i < fa.n; i++) rep->pass = compare_one(fb.v[i], fa.v[i], i, rep);
  free(fa.v);
  free(fb.v);
  ox_interp_free(a);
  ox_interp_free(b);
  return 0;
}
