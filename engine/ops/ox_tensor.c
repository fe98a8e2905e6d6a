/* ox_tensor.c - dense tensors, dtype rounding, seeded RNG, tolerance comparison and
 * reference-counted runtime values (see ox_tensor.h for the storage model).
 *
 * Invariants: t->numel == product(shape); data holds numel elements of the storage type;
 * every value stored through ox_tensor_set/_set_i64 is already rounded to the dtype, so
 * kernels may compute in double and store once. Rounding f16/bf16 goes through float first
 * (double -> float -> half), the same double rounding torch performs when it computes in f32
 * and stores in half precision.
 */
#include "ops/ox_tensor.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"

/* ------------------------------------------------------------------ dtypes */

bool ox_tensor_dtype_supported(OxDType dt) { return ox_dtype_storage(dt) != OX_ST_NONE; }

static size_t storage_size(OxStorage s) {
  switch (s) {
  case OX_ST_F32: return sizeof(float);
  case OX_ST_F64: return sizeof(double);
  case OX_ST_I64: return sizeof(int64_t);
  case OX_ST_U8: return 1;
  default: return 0;
  }
}

float ox_round_f16(double v) {
  float f = (float)v;
  if (isnan(f)) return f;
  double a = fabs((double)f);
  /* 65520 is halfway between 65504 (max half) and 65536; ties-to-even picks 65536 = inf. */
  if (a >= 65520.0) return copysignf(INFINITY, f);
  double q;
  if (a < 6.103515625e-05) { /* below 2^-14: subnormal, fixed quantum 2^-24 */
    q = ldexp(1.0, -24);
  } else {
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): leading bit is 2^(e-1) */
    q = ldexp(1.0, e - 1 - 10);
  }
  return (float)copysign(nearbyint(a / q) * q, (double)f);
}

float ox_round_bf16(double v) {
  float f = (float)v;
  if (isnan(f)) return f;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even on the dropped 16 bits */
  u &= 0xffff0000u;
  memcpy(&f, &u, sizeof f);
  return f;
}

static int64_t to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v; /* C conversion truncates toward zero, like torch's float->int cast */
}

static int64_t wrap_i32(int64_t v) { return (int64_t)(int32_t)(uint32_t)(uint64_t)v; }

double ox_dtype_round(OxDType dt, double v) {
  switch (dt) {
  case OX_DT_F32: return (double)(float)v;
  case OX_DT_F16: return (double)ox_round_f16(v);
  case OX_DT_BF16: return (double)ox_round_bf16(v);
  case OX_DT_I64: return (double)to_i64(v);
  case OX_DT_I32: return (double)wrap_i32(to_i64(v));
  case OX_DT_BOOL: return v != 0.0 ? 1.0 : 0.0;
  default: return v;
  }
}

double ox_dtype_max(OxDType dt) {
  switch (dt) {
  case OX_DT_F32: return FLT_MAX;
  case OX_DT_F64: return DBL_MAX;
  case OX_DT_F16: return 65504.0;
  case OX_DT_BF16: return 3.3895313892515355e38;
  default: return 0.0;
  }
}

/* ------------------------------------------------------------------ tensors */

int64_t ox_shape_numel(int32_t rank, const int64_t *shape) {
  /* the product of the non-zero sizes must fit too: kernels multiply sub-shapes of a tensor
   * with a zero size ([0, 2^40, 2^40]: 0 elements, but 2^80 in its inner dims) */
  int64_t n = 1;
  bool zero = false;
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] == 0) {
      zero = true;
      continue;
    }
    if (n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return zero ? 0 : n;
}

static OxTensor *tensor_alloc(OxDType dt, int32_t rank, const int64_t *shape, bool zero) {
  OxStorage st = ox_dtype_storage(dt);
  if (st == OX_ST_NONE || rank < 0 || rank > OX_TENSOR_MAX_RANK || (rank > 0 && !shape)) return NULL;
  int64_t n = ox_shape_numel(rank, shape);
  if (n < 0) return NULL;
  size_t es = storage_size(st);
  if ((uint64_t)n > SIZE_MAX / es / 2) return NULL;
  OxTensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  for (int32_t i = 0; i < rank; i++) t->shape[i] = shape[i];
  t->numel = n;
  /* calloc(0) may return NULL; always allocate at least one element so data is valid. */
  t->data.p = zero ? calloc(n ? (size_t)n : 1, es) : malloc((n ? (size_t)n : 1) * es);
  if (!t->data.p) {
    free(t);
    return NULL;
  }
  return t;
}

OxTensor *ox_tensor_new(OxDType dt, int32_t rank, const int64_t *shape) { return tensor_alloc(dt, rank, shape, true); }

OxTensor *ox_tensor_new_unset(OxDType dt, int32_t rank, const int64_t *shape) {
  return tensor_alloc(dt, rank, shape, false);
}

void ox_tensor_free(OxTensor *t) {
  if (!t) return;
  free(t->data.p);
  free(t);
}

OxTensor *ox_tensor_clone(const OxTensor *t) {
  OxTensor *c = ox_tensor_new_unset(t->dtype, t->rank, t->shape);
  if (c) memcpy(c->data.p, t->data.p, (size_t)t->numel * storage_size(ox_dtype_storage(t->dtype)));
  return c;
}

OxTensor *ox_tensor_cast(const OxTensor *t, OxDType dt) {
  if (dt == t->dtype) return ox_tensor_clone(t);
  OxTensor *c = ox_tensor_new(dt, t->rank, t->shape);
  if (!c) return NULL;
  OxStorage src = ox_dtype_storage(t->dtype), dst = ox_dtype_storage(dt);
  for (int64_t i = 0; i < t->numel; i++) {
    if ((src == OX_ST_I64 || src == OX_ST_U8) && dst == OX_ST_I64)
      ox_tensor_set_i64(c, i, ox_tensor_get_i64(t, i));
    else
      ox_tensor_set(c, i, ox_tensor_get(t, i));
  }
  return c;
}

bool ox_tensor_same_shape(const OxTensor *a, const OxTensor *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

void ox_tensor_set_rounded(OxTensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case OX_DT_F32: t->data.f[i] = (float)v; break;
  case OX_DT_F16: t->data.f[i] = ox_round_f16(v); break;
  case OX_DT_BF16: t->data.f[i] = ox_round_bf16(v); break;
  case OX_DT_F64: t->data.d[i] = v; break;
  case OX_DT_I64: t->data.i[i] = to_i64(v); break;
  case OX_DT_I32: t->data.i[i] = wrap_i32(to_i64(v)); break;
  case OX_DT_BOOL: t->data.b[i] = v != 0.0; break;
  default: break;
  }
}

int64_t ox_tensor_get_i64(const OxTensor *t, int64_t i) {
  switch (ox_dtype_storage(t->dtype)) {
  case OX_ST_I64: return t->data.i[i];
  case OX_ST_U8: return t->data.b[i];
  default: return to_i64(ox_tensor_get(t, i));
  }
}

void ox_tensor_set_i64(OxTensor *t, int64_t i, int64_t v) {
  switch (t->dtype) {
  case OX_DT_I64: t->data.i[i] = v; break;
  case OX_DT_I32: t->data.i[i] = wrap_i32(v); break;
  case OX_DT_BOOL: t->data.b[i] = v != 0; break;
  default: ox_tensor_set(t, i, (double)v); break;
  }
}

int ox_tensor_describe(const OxTensor *t, char *buf, size_t cap) {
  size_t len = 0;
  int k = snprintf(buf, cap, "%s[", ox_dtype_abbr(t->dtype));
  if (k > 0) len += (size_t)k;
  for (int32_t i = 0; i < t->rank; i++) {
    k = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, "%s%lld", i ? ", " : "",
                 (long long)t->shape[i]);
    if (k > 0) len += (size_t)k;
  }
  k = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, "]");
  if (k > 0) len += (size_t)k;
  return (int)len;
}

/* ------------------------------------------------------------------ RNG */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ox_rng_seed(OxRng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

/* xoshiro256** on a state the caller may keep in registers (a fill loop copies it in and out) */
static inline uint64_t rng_step(uint64_t *s) {
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t ox_rng_next(OxRng *r) { return rng_step(r->s); }

double ox_rng_uniform(OxRng *r) { return (double)(ox_rng_next(r) >> 11) * 0x1.0p-53; }

int64_t ox_rng_int(OxRng *r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t range = (uint64_t)hi - (uint64_t)lo;
  /* rejection sampling: no modulo bias, same sequence everywhere */
  uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x;
  do x = ox_rng_next(r);
  while (x >= limit);
  return (int64_t)((uint64_t)lo + x % range);
}

uint64_t ox_seed_mix(uint64_t seed, const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  uint64_t x = seed ^ rotl(h, 17);
  return splitmix64(&x);
}

void ox_tensor_fill_random(OxTensor *t, OxRng *r, double lo, double hi, int64_t ilo, int64_t ihi) {
  OxStorage st = ox_dtype_storage(t->dtype);
  /* the common dtypes without a per-element dispatch: the same values as ox_tensor_set writes */
  if (t->dtype == OX_DT_F32 || t->dtype == OX_DT_F64) {
    uint64_t s[4] = {r->s[0], r->s[1], r->s[2], r->s[3]}; /* in registers for the loop */
    double span = hi - lo;
    if (t->dtype == OX_DT_F32) {
      float *f = t->data.f;
      for (int64_t i = 0; i < t->numel; i++) f[i] = (float)(lo + span * ((double)(rng_step(s) >> 11) * 0x1.0p-53));
    } else {
      double *d = t->data.d;
      for (int64_t i = 0; i < t->numel; i++) d[i] = lo + span * ((double)(rng_step(s) >> 11) * 0x1.0p-53);
    }
    memcpy(r->s, s, sizeof s);
    return;
  }
  for (int64_t i = 0; i < t->numel; i++) {
    if (st == OX_ST_I64)
      ox_tensor_set_i64(t, i, ox_rng_int(r, ilo, ihi));
    else if (st == OX_ST_U8)
      t->data.b[i] = (uint8_t)(ox_rng_next(r) >> 63);
    else
      ox_tensor_set(t, i, lo + (hi - lo) * ox_rng_uniform(r));
  }
}

void ox_tensor_fill_sin(OxTensor *t, double scale, double freq, double phase) {
  for (int64_t i = 0; i < t->numel; i++) ox_tensor_set(t, i, scale * sin(freq * (double)i + phase));
}

/* ------------------------------------------------------------------ comparison */

OxTolerance ox_tolerance_for(OxDType dt) {
  OxTolerance t = {0.0, 0.0};
  switch (dt) {
  case OX_DT_F64: t.atol = t.rtol = 1e-10; break;
  case OX_DT_F32: t.atol = t.rtol = 1e-5; break;
  case OX_DT_F16: t.atol = t.rtol = 1e-2; break;
  case OX_DT_BF16: t.atol = t.rtol = 2e-2; break;
  default: break;
  }
  return t;
}

static void fmt_num(char *buf, size_t cap, double v) {
  if (isnan(v))
    snprintf(buf, cap, "nan");
  else if (isinf(v))
    snprintf(buf, cap, v > 0 ? "inf" : "-inf");
  else
    snprintf(buf, cap, "%.9g", v);
}

/* One element of a floating-point comparison: the error statistics, and whether it is within
 * atol (already scaled) + rtol * |want|; NaN equals NaN, an infinity only itself. */
static inline bool close_enough(double gv, double wv, double atol, double rtol, OxCompare *res) {
  if (isnan(wv) || isnan(gv)) return isnan(wv) && isnan(gv);
  if (isinf(wv) || isinf(gv)) return gv == wv;
  double d = fabs(gv - wv);
  if (d > res->max_abs) res->max_abs = d;
  if (wv != 0.0 && d / fabs(wv) > res->max_rel) res->max_rel = d / fabs(wv);
  return d <= atol + rtol * fabs(wv);
}

static void note_bad(OxCompare *res, int64_t i, double gv, double wv) {
  if (res->first_bad < 0) {
    char a[64], b[64];
    res->first_bad = i;
    fmt_num(a, sizeof a, gv);
    fmt_num(b, sizeof b, wv);
    snprintf(res->why, sizeof res->why, "element %lld: %s vs %s", (long long)i, a, b);
  }
  res->n_bad++;
}

/* One pass over two f32 arrays as bits: whether they are bitwise equal, and the largest finite
 * |want| (the comparison's scale; 0 if none). For non-negative floats the order of the bit
 * patterns (sign cleared) is the order of the values, and a pattern below the exponent mask's
 * is finite, so the maximum is an integer maximum: 4 lanes in a GNU C vector, which gcc and
 * clang turn into SIMD code. Most checked rewrites move data without arithmetic (split, cat,
 * slices), so their outputs are the same bits and the element loops below are not needed. */
typedef int32_t OxI32x4 __attribute__((vector_size(16)));

static bool f32_same_bits(const float *got, const float *want, int64_t n, double *scale) {
  const unsigned char *gb = (const unsigned char *)got, *wb = (const unsigned char *)want;
  const OxI32x4 abs_mask = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
  const OxI32x4 exp_mask = {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000};
  OxI32x4 diff = {0, 0, 0, 0}, mx = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    OxI32x4 g, w;
    memcpy(&g, gb + 4 * i, sizeof g);
    memcpy(&w, wb + 4 * i, sizeof w);
    diff |= g ^ w;
    OxI32x4 u = w & abs_mask;
    u &= u < exp_mask; /* non-finite: 0 */
    OxI32x4 up = u > mx;
    mx = (mx & ~up) | (u & up);
  }
  int32_t d = diff[0] | diff[1] | diff[2] | diff[3], m = 0;
  for (int k = 0; k < 4; k++) m = mx[k] > m ? mx[k] : m;
  for (; i < n; i++) {
    int32_t g, w;
    memcpy(&g, gb + 4 * i, sizeof g);
    memcpy(&w, wb + 4 * i, sizeof w);
    d |= g ^ w;
    w &= INT32_MAX;
    if (w < 0x7f800000 && w > m) m = w;
  }
  float f;
  memcpy(&f, &m, sizeof f);
  *scale = (double)f;
  return d == 0;
}

bool ox_tensor_compare(const OxTensor *got, const OxTensor *want, const OxTolerance *tol, OxCompare *res) {
  memset(res, 0, sizeof *res);
  res->first_bad = -1;
  res->tol = tol ? *tol : ox_tolerance_for(want->dtype);
  if (got->dtype != want->dtype || !ox_tensor_same_shape(got, want)) {
    char a[64], b[64];
    ox_tensor_describe(got, a, sizeof a);
    ox_tensor_describe(want, b, sizeof b);
    snprintf(res->why, sizeof res->why, "%s %s vs %s", got->dtype != want->dtype ? "dtype" : "shape", a, b);
    res->n_bad = 1;
    return false;
  }
  /* f32 (the common case) without a per-element dtype switch; got has want's dtype */
  bool f32 = ox_dtype_storage(want->dtype) == OX_ST_F32;
  const float *gf = got->data.f, *wf = want->data.f;
  double scale = 0.0;
  bool same = false;
  if (f32)
    same = f32_same_bits(gf, wf, want->numel, &scale);
  else
    for (int64_t i = 0; i < want->numel; i++) {
      double w = fabs(ox_tensor_get(want, i));
      if (isfinite(w) && w > scale) scale = w;
    }
  if (scale == 0.0) scale = 1.0;
  res->scale = scale;
  double atol = res->tol.atol * scale, rtol = res->tol.rtol;
  if (same) {
    /* equal bits: every finite pair has error 0, NaN meets NaN and an infinity itself, so
     * the statistics stay 0 and nothing is bad (what the loops below would find) */
  } else if (f32) {
    /* finite pairs in a branch-free pass (the statistics and a count of the bad ones, as
     * close_enough gives them); any bad or non-finite pair sends the tensor through
     * close_enough again, which also finds the first bad element */
    double max_abs = 0.0, max_rel = 0.0;
    int64_t n_odd = 0;
    for (int64_t i = 0; i < want->numel; i++) {
      double gv = (double)gf[i], wv = (double)wf[i], aw = fabs(wv), d = fabs(gv - wv);
      bool finite = isfinite(gv) && isfinite(wv);
      double dd = finite ? d : 0.0, rel = finite && wv != 0.0 ? d / aw : 0.0;
      max_abs = dd > max_abs ? dd : max_abs;
      max_rel = rel > max_rel ? rel : max_rel;
      n_odd += !finite || !(d <= atol + rtol * aw);
    }
    if (n_odd == 0) {
      res->max_abs = max_abs;
      res->max_rel = max_rel;
    } else {
      for (int64_t i = 0; i < want->numel; i++)
        if (!close_enough((double)gf[i], (double)wf[i], atol, rtol, res)) note_bad(res, i, (double)gf[i], (double)wf[i]);
    }
  } else if (res->tol.atol == 0.0 && res->tol.rtol == 0.0 && ox_dtype_storage(want->dtype) != OX_ST_F64) {
    /* integers and bools: exact */
    for (int64_t i = 0; i < want->numel; i++) {
      int64_t gi = ox_tensor_get_i64(got, i), wi = ox_tensor_get_i64(want, i);
      double gv = (double)gi, wv = (double)wi, d = fabs(gv - wv);
      if (d > res->max_abs) res->max_abs = d;
      if (wv != 0.0 && d / fabs(wv) > res->max_rel) res->max_rel = d / fabs(wv);
      if (gi != wi) note_bad(res, i, gv, wv);
    }
  } else {
    for (int64_t i = 0; i < want->numel; i++) {
      double gv = ox_tensor_get(got, i), wv = ox_tensor_get(want, i);
      if (!close_enough(gv, wv, atol, rtol, res)) note_bad(res, i, gv, wv);
    }
  }
  res->pass = res->n_bad == 0;
  return res->pass;
}

/* ------------------------------------------------------------------ runtime values */

static OxRtValue *rt_new(OxRtKind k) {
  OxRtValue *v = ox_xcalloc(1, sizeof *v);
  v->kind = k;
  v->refs = 1;
  return v;
}

OxRtValue *ox_rt_none(void) { return rt_new(OX_RT_NONE); }

OxRtValue *ox_rt_tensor(OxTensor *t) {
  OxRtValue *v = rt_new(OX_RT_TENSOR);
  v->u.t = t;
  return v;
}

OxRtValue *ox_rt_int(int64_t i) {
  OxRtValue *v = rt_new(OX_RT_INT);
  v->u.i = i;
  return v;
}

OxRtValue *ox_rt_float(double f) {
  OxRtValue *v = rt_new(OX_RT_FLOAT);
  v->u.f = f;
  return v;
}

OxRtValue *ox_rt_bool(bool b) {
  OxRtValue *v = rt_new(OX_RT_BOOL);
  v->u.b = b;
  return v;
}

OxRtValue *ox_rt_dtype(OxDType dt) {
  OxRtValue *v = rt_new(OX_RT_DTYPE);
  v->u.dtype = dt;
  return v;
}

OxRtValue *ox_rt_text(OxRtKind kind, const char *s) {
  OxRtValue *v = rt_new(kind);
  v->s = ox_xstrdup(s ? s : "");
  return v;
}

OxRtValue *ox_rt_ellipsis(void) { return rt_new(OX_RT_ELLIPSIS); }

OxRtValue *ox_rt_seq(OxRtKind kind, uint32_t n) {
  OxRtValue *v = rt_new(kind);
  v->n = n;
  v->u.items = ox_xcalloc(n ? n : 1, sizeof *v->u.items);
  return v;
}

OxRtValue *ox_rt_ref(OxRtValue *v) {
  if (v) v->refs++;
  return v;
}

void ox_rt_flatten(const OxRtValue *v, OxRtFlat *f) {
  if (v && (v->kind == OX_RT_TUPLE || v->kind == OX_RT_LIST)) {
    for (uint32_t i = 0; i < v->n; i++) ox_rt_flatten(v->u.items[i], f);
    return;
  }
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 8;
    f->v = ox_xrealloc(f->v, f->cap * sizeof *f->v);
  }
  f->v[f->n++] = v;
}

void ox_rt_unref(OxRtValue *v) {
  if (!v || --v->refs > 0) return;
  switch (v->kind) {
  case OX_RT_TENSOR: ox_tensor_free(v->u.t); break;
  case OX_RT_TUPLE:
  case OX_RT_LIST:
  case OX_RT_SLICE:
    for (uint32_t i = 0; i < v->n; i++) ox_rt_unref(v->u.items[i]);
    free(v->u.items);
    break;
  default: break;
  }
  free(v->s);
  free(v);
}

const char *ox_rt_kind_name(OxRtKind k) {
  static const char *const names[] = {"None", "tensor", "tuple", "list",     "int",   "float",
                                      "bool", "str",    "dtype", "slice", "Ellipsis", "opaque"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

bool ox_rt_is_scalar(const OxRtValue *v) {
  return v && (v->kind == OX_RT_INT || v->kind == OX_RT_FLOAT || v->kind == OX_RT_BOOL);
}

double ox_rt_scalar(const OxRtValue *v) {
  switch (v->kind) {
  case OX_RT_INT: return (double)v->u.i;
  case OX_RT_FLOAT: return v->u.f;
  case OX_RT_BOOL: return v->u.b ? 1.0 : 0.0;
  default: return 0.0;
  }
}
