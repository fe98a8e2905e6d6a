/* ox_kernels.c - reference CPU kernels for every op in ox_ops.def.
 *
 * Each kernel reads its canonical slots (borrowed runtime values, see ox_kernels.h), checks
 * them, and returns a freshly allocated result. Kernels never keep references to their
 * slots except when returning an element of a tuple (getitem), which is ox_rt_ref'ed.
 *
 * Numerics: floating results are computed in double and stored once (ox_tensor_set rounds
 * to the dtype). Operands of float ops are first rounded to the compute precision (float for
 * f32/f16/bf16 results, as torch's opmath type; double for f64), so a single add/mul/div
 * reproduces torch bit for bit and longer computations (matmul, norms, reductions) are at
 * least as accurate as torch's float accumulation. Integer arithmetic is exact in int64.
 *
 * Every result tensor is allocated through knew(), which enforces the element budget, so a
 * kernel can never allocate more than k->max_elems elements per tensor.
 */
#include "ops/ox_kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "ops/ox_shape.h"

typedef OxKernelCtx K;
typedef OxRtValue V;
typedef int (*KFn)(K *k, V *const *s, V **out);

#define MAXR OX_TENSOR_MAX_RANK

/* ------------------------------------------------------------------ errors, allocation */

static int kfail(K *k, const char *fmt, ...) {
  if (!k->err || !k->errcap) return -1;
  int n = snprintf(k->err, k->errcap, "%s: ", k->op_name ? k->op_name : "kernel");
  if (n < 0) n = 0;
  if ((size_t)n < k->errcap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->err + n, k->errcap - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static void shape_str(int rank, const int64_t *shape, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  int w = snprintf(buf, cap, "[");
  if (w > 0) len = (size_t)w;
  for (int i = 0; i < rank && len < cap; i++) {
    w = snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (w > 0) len += (size_t)w;
  }
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* A result tensor within the budget; zero-filled unless the kernel writes every element. */
static OxTensor *knew_as(K *k, OxDType dt, int rank, const int64_t *shape, bool zero) {
  char b[128];
  if (rank < 0 || rank > MAXR) {
    kfail(k, "result rank %d exceeds the maximum of %d", rank, MAXR);
    return NULL;
  }
  int64_t n = ox_shape_numel(rank, shape);
  if (n < 0) {
    shape_str(rank, shape, b, sizeof b);
    kfail(k, "invalid result shape %s", b);
    return NULL;
  }
  int64_t lim = k->max_elems > 0 ? k->max_elems : OX_KERNEL_DEFAULT_MAX_ELEMS;
  if (n > lim) {
    kfail(k, "result of %lld elements exceeds the budget of %lld elements", (long long)n, (long long)lim);
    return NULL;
  }
  if (!ox_tensor_dtype_supported(dt)) {
    kfail(k, "unsupported dtype %s", ox_dtype_abbr(dt));
    return NULL;
  }
  OxTensor *t = zero ? ox_tensor_new(dt, rank, shape) : ox_tensor_new_unset(dt, rank, shape);
  if (!t) kfail(k, "out of memory for %lld elements", (long long)n);
  return t;
}

static OxTensor *knew(K *k, OxDType dt, int rank, const int64_t *shape) { return knew_as(k, dt, rank, shape, true); }

static int ret_tensor(OxTensor *t, V **out) {
  if (!t) return -1;
  *out = ox_rt_tensor(t);
  return 0;
}

static size_t esize(OxDType dt) {
  switch (ox_dtype_storage(dt)) {
  case OX_ST_F32: return sizeof(float);
  case OX_ST_F64: return sizeof(double);
  case OX_ST_I64: return sizeof(int64_t);
  case OX_ST_U8: return 1;
  default: return 0;
  }
}

static bool is_float_dt(OxDType dt) {
  OxStorage s = ox_dtype_storage(dt);
  return s == OX_ST_F32 || s == OX_ST_F64;
}

static bool is_int_store(OxDType dt) {
  OxStorage s = ox_dtype_storage(dt);
  return s == OX_ST_I64 || s == OX_ST_U8;
}

/* Round an operand to the precision the op computes in (torch's opmath type). */
static double opmath(OxDType out_dt, double x) {
  return ox_dtype_storage(out_dt) == OX_ST_F32 ? (double)(float)x : x;
}

/* Copy n elements, converting dtype if needed. */
static void copy_elems(OxTensor *dst, int64_t doff, const OxTensor *src, int64_t soff, int64_t n) {
  if (dst->dtype == src->dtype) {
    size_t es = esize(src->dtype);
    memcpy((char *)dst->data.p + (size_t)doff * es, (const char *)src->data.p + (size_t)soff * es,
           (size_t)n * es);
  } else if (is_int_store(src->dtype) && is_int_store(dst->dtype)) {
    for (int64_t i = 0; i < n; i++) ox_tensor_set_i64(dst, doff + i, ox_tensor_get_i64(src, soff + i));
  } else {
    for (int64_t i = 0; i < n; i++) ox_tensor_set(dst, doff + i, ox_tensor_get(src, soff + i));
  }
}

/* a positive allocation count (malloc(0) may return NULL) */
static size_t nz(int64_t n) { return (size_t)(n > 0 ? n : 1); }

static double *to_doubles(K *k, const OxTensor *t) {
  double *d = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *d);
  if (!d) {
    kfail(k, "out of memory for %lld elements", (long long)t->numel);
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++) d[i] = ox_tensor_get(t, i);
  return d;
}

/* ------------------------------------------------------------------ argument access */

static bool is_none(const V *v) { return !v || v->kind == OX_RT_NONE; }

static const OxTensor *get_tensor(K *k, const V *v, const char *what) {
  if (v && v->kind == OX_RT_TENSOR) return v->u.t;
  kfail(k, "%s: expected a tensor, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return NULL;
}

static bool get_int(K *k, const V *v, const char *what, int64_t *out) {
  if (v) {
    switch (v->kind) {
    case OX_RT_INT: *out = v->u.i; return true;
    case OX_RT_BOOL: *out = v->u.b; return true;
    case OX_RT_TENSOR:
      if (v->u.t->numel == 1 && is_int_store(v->u.t->dtype)) {
        *out = ox_tensor_get_i64(v->u.t, 0);
        return true;
      }
      break;
    default: break;
    }
  }
  kfail(k, "%s: expected an int, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return false;
}

static bool get_num(K *k, const V *v, const char *what, double *out) {
  if (v) {
    if (ox_rt_is_scalar(v)) {
      *out = ox_rt_scalar(v);
      return true;
    }
    if (v->kind == OX_RT_TENSOR && v->u.t->numel == 1) {
      *out = ox_tensor_get(v->u.t, 0);
      return true;
    }
  }
  kfail(k, "%s: expected a number, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return false;
}

static bool get_bool(K *k, const V *v, const char *what, bool *out) {
  if (v && v->kind == OX_RT_BOOL) {
    *out = v->u.b;
    return true;
  }
  if (v && v->kind == OX_RT_INT) {
    *out = v->u.i != 0;
    return true;
  }
  kfail(k, "%s: expected a bool, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return false;
}

/* An int list (LIST/TUPLE of ints) or a single int; returns the count or -1. */
static int get_ints(K *k, const V *v, const char *what, int64_t *out, int max) {
  if (v && (v->kind == OX_RT_LIST || v->kind == OX_RT_TUPLE)) {
    if ((int)v->n > max) {
      kfail(k, "%s: more than %d entries", what, max);
      return -1;
    }
    for (uint32_t i = 0; i < v->n; i++)
      if (!get_int(k, v->u.items[i], what, &out[i])) return -1;
    return (int)v->n;
  }
  if (v && (v->kind == OX_RT_INT || v->kind == OX_RT_BOOL)) {
    out[0] = v->kind == OX_RT_INT ? v->u.i : v->u.b;
    return 1;
  }
  kfail(k, "%s: expected an int or a list of ints, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return -1;
}

/* None -> OX_DT_UNKNOWN; a dtype we support -> it. */
static bool get_dtype_opt(K *k, const V *v, const char *what, OxDType *out) {
  *out = OX_DT_UNKNOWN;
  if (is_none(v)) return true;
  if (v->kind == OX_RT_DTYPE) {
    if (!ox_tensor_dtype_supported(v->u.dtype)) {
      kfail(k, "%s: unsupported dtype %s", what, v->s ? v->s : ox_dtype_abbr(v->u.dtype));
      return false;
    }
    *out = v->u.dtype;
    return true;
  }
  kfail(k, "%s: expected a dtype, got %s", what, ox_rt_kind_name(v->kind));
  return false;
}

static bool norm_dim(K *k, int64_t d, int rank, int *out) {
  int r = rank ? rank : 1; /* torch lets a 0-dim tensor use dim 0 / -1 */
  if (d < -r || d >= r) {
    kfail(k, "dim %lld out of range for a tensor of rank %d", (long long)d, rank);
    return false;
  }
  *out = (int)(d < 0 ? d + r : d);
  return true;
}

static bool need_float(K *k, const OxTensor *t, const char *what) {
  if (is_float_dt(t->dtype)) return true;
  kfail(k, "%s: expected a floating-point tensor, got %s", what, ox_dtype_abbr(t->dtype));
  return false;
}

static bool same_dtype(K *k, const OxTensor *a, const OxTensor *b) {
  if (a->dtype == b->dtype) return true;
  kfail(k, "dtype mismatch: %s and %s", ox_dtype_abbr(a->dtype), ox_dtype_abbr(b->dtype));
  return false;
}

/* ------------------------------------------------------------------ type promotion */

static int dt_cat(OxDType d) {
  if (d == OX_DT_BOOL) return 0;
  if (ox_dtype_is_float(d)) return 2;
  return 1;
}

OxDType ox_dtype_promote(OxDType a, OxDType b) {
  if (a == b || b == OX_DT_UNKNOWN) return a;
  if (a == OX_DT_UNKNOWN) return b;
  int ca = dt_cat(a), cb = dt_cat(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return OX_DT_I64; /* i32 with i64 */
  if (ca == 2) return (a == OX_DT_F64 || b == OX_DT_F64) ? OX_DT_F64 : OX_DT_F32;
  return a;
}

/* An elementwise operand: a tensor or a Python scalar. */
typedef struct Opnd {
  const OxTensor *t; /* NULL: scalar */
  OxRtKind sk;       /* scalar kind (INT, FLOAT, BOOL) */
  double d;
  int64_t i;
} Opnd;

static bool get_opnd(K *k, const V *v, const char *what, Opnd *o) {
  memset(o, 0, sizeof *o);
  if (v && v->kind == OX_RT_TENSOR) {
    o->t = v->u.t;
    return true;
  }
  if (v && ox_rt_is_scalar(v)) {
    o->sk = v->kind;
    o->d = ox_rt_scalar(v);
    /* a float's integer view is only read where the float is integral; -inf and NaN must not be
     * converted (undefined behaviour) */
    o->i = v->kind == OX_RT_INT ? v->u.i
         : v->kind == OX_RT_BOOL ? v->u.b
         : (isfinite(v->u.f) && fabs(v->u.f) < 9.2e18 ? (int64_t)v->u.f : 0);
    return true;
  }
  kfail(k, "%s: expected a tensor or a number, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
  return false;
}

/* torch.result_type: dimensioned tensors beat zero-dim tensors beat Python scalars, unless a
 * lower-priority operand is of a higher category (bool < int < float). */
static OxDType combine_cat(OxDType higher, OxDType lower) {
  if (higher == OX_DT_UNKNOWN) return lower;
  if (dt_cat(higher) == 2) return higher;
  if (higher == OX_DT_BOOL || (lower != OX_DT_UNKNOWN && dt_cat(lower) == 2)) return ox_dtype_promote(higher, lower);
  return higher;
}

static OxDType result_type(const Opnd *ops, int n) {
  OxDType dim = OX_DT_UNKNOWN, zero = OX_DT_UNKNOWN, wrapped = OX_DT_UNKNOWN;
  for (int i = 0; i < n; i++) {
    if (ops[i].t) {
      if (ops[i].t->rank == 0)
        zero = ox_dtype_promote(zero, ops[i].t->dtype);
      else
        dim = ox_dtype_promote(dim, ops[i].t->dtype);
    } else if (ops[i].sk != OX_RT_NONE) {
      OxDType s = ops[i].sk == OX_RT_FLOAT ? OX_DT_F32 : ops[i].sk == OX_RT_INT ? OX_DT_I64 : OX_DT_BOOL;
      wrapped = ox_dtype_promote(wrapped, s);
    }
  }
  return combine_cat(dim, combine_cat(zero, wrapped));
}

/* ------------------------------------------------------------------ strided views */

static void cstrides(int rank, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i] ? shape[i] : 1;
  }
}

/* A strided view of a contiguous tensor: element (i0..in) is at off + sum(i_d * st[d]). */
typedef struct VDesc {
  int rank;
  int64_t shape[MAXR];
  int64_t st[MAXR];
  int64_t off;
} VDesc;

static void vd_init(VDesc *v, const OxTensor *t) {
  v->rank = t->rank;
  memcpy(v->shape, t->shape, sizeof v->shape);
  cstrides(t->rank, t->shape, v->st);
  v->off = 0;
}

static OxTensor *vd_gather(K *k, const OxTensor *in, const VDesc *v) {
  OxTensor *o = knew_as(k, in->dtype, v->rank, v->shape, false); /* the runs below cover every element */
  if (!o || o->numel == 0) return o;
  size_t es = esize(in->dtype);
  int64_t idx[MAXR] = {0};
  int64_t p = v->off;
  /* runs: whole rows when the innermost dimension is contiguous, else single elements */
  int r = v->rank;
  bool rows = r >= 1 && v->st[r - 1] == 1;
  int64_t len = rows ? v->shape[r - 1] : 1, runs = o->numel / len;
  int last = rows ? r - 2 : r - 1; /* the dimensions stepped between runs */
  for (int64_t i = 0; i < runs; i++) {
    memcpy((char *)o->data.p + (size_t)(i * len) * es, (const char *)in->data.p + (size_t)p * es, (size_t)len * es);
    for (int d = last; d >= 0; d--) {
      idx[d]++;
      p += v->st[d];
      if (idx[d] < v->shape[d]) break;
      p -= v->st[d] * v->shape[d];
      idx[d] = 0;
    }
  }
  return o;
}

static OxTensor *reshaped_copy(K *k, const OxTensor *in, int rank, const int64_t *shape) {
  OxTensor *o = knew(k, in->dtype, rank, shape);
  if (!o) return NULL;
  if (o->numel != in->numel) {
    char a[128], b[128];
    shape_str(rank, shape, a, sizeof a);
    shape_str(in->rank, in->shape, b, sizeof b);
    ox_tensor_free(o);
    kfail(k, "shape %s is invalid for input of shape %s", a, b);
    return NULL;
  }
  copy_elems(o, 0, in, 0, in->numel);
  return o;
}

/* ------------------------------------------------------------------ broadcasting */

static bool bc_shape(K *k, int n, const Opnd *ops, int *rank, int64_t *shape) {
  int r = 0;
  for (int i = 0; i < n; i++)
    if (ops[i].t && ops[i].t->rank > r) r = ops[i].t->rank;
  for (int d = 0; d < r; d++) shape[d] = 1;
  for (int i = 0; i < n; i++) {
    const OxTensor *t = ops[i].t;
    if (!t) continue;
    for (int d = 0; d < t->rank; d++) {
      int od = r - t->rank + d;
      int64_t s = t->shape[d];
      if (s == shape[od] || s == 1) continue;
      if (shape[od] == 1) {
        shape[od] = s;
        continue;
      }
      char a[128], b[128];
      shape_str(t->rank, t->shape, a, sizeof a);
      shape_str(r, shape, b, sizeof b);
      kfail(k, "shapes %s and %s cannot be broadcast", b, a);
      return false;
    }
  }
  *rank = r;
  return true;
}

static void bc_strides(const OxTensor *t, int rank, int64_t *st) {
  int64_t cs[MAXR];
  cstrides(t->rank, t->shape, cs);
  for (int d = 0; d < rank; d++) {
    int td = d - (rank - t->rank);
    st[d] = (td < 0 || t->shape[td] == 1) ? 0 : cs[td];
  }
}

/* One step of an odometer over the first `dims` dims of a broadcast: the index idx moves to the
 * next position (the last of those dims fastest) and each operand's element offset off[i]
 * follows its strides st[i] (0 along broadcast dims). */
static void bc_advance(int dims, const int64_t *shape, int n, int64_t (*st)[MAXR], int64_t *idx, int64_t *off) {
  for (int d = dims - 1; d >= 0; d--) {
    idx[d]++;
    for (int i = 0; i < n; i++) off[i] += st[i][d];
    if (idx[d] < shape[d]) return;
    for (int i = 0; i < n; i++) off[i] -= st[i][d] * shape[d];
    idx[d] = 0;
  }
}

typedef double (*FnD)(const double *x, const void *c);
typedef int64_t (*FnI)(const int64_t *x, const void *c, int *err);

/* Applies fd (float path) or fi (exact int path) elementwise over broadcast operands. */
enum { B_ADD, B_SUB, B_MUL, B_DIV, B_DIV_TRUNC, B_DIV_FLOOR, B_POW, B_WHERE };

typedef struct BinC {
  int op;
  double alpha;
  int64_t ialpha;
} BinC;

static double bin_d(const double *x, const void *cv);

static OxTensor *ewise(K *k, int n, const Opnd *ops, OxDType out_dt, FnD fd, FnI fi, const void *c) {
  int rank = 0;
  int64_t shape[MAXR] = {0};
  if (!bc_shape(k, n, ops, &rank, shape)) return NULL;
  OxTensor *o = knew(k, out_dt, rank, shape);
  if (!o) return NULL;
  int64_t st[3][MAXR], off[3] = {0, 0, 0}, idx[MAXR] = {0};
  for (int i = 0; i < n; i++)
    if (ops[i].t) bc_strides(ops[i].t, rank, st[i]);
    else memset(st[i], 0, sizeof st[i]);
  bool ip = fi && is_int_store(out_dt);
  /* float32 throughout (the common case): the same arithmetic as the general loop below
   * (operands widened to double, a scalar rounded to float first as opmath does, the result
   * rounded once), read straight from the buffers, the innermost dim in a plain loop */
  bool f32 = !ip && out_dt == OX_DT_F32 && rank >= 1;
  for (int i = 0; i < n && f32; i++) f32 = !ops[i].t || ops[i].t->dtype == OX_DT_F32;
  if (f32) {
    const float *src[3] = {0};
    double sc[3] = {0};
    for (int i = 0; i < n; i++) {
      if (ops[i].t) src[i] = ops[i].t->data.f;
      else sc[i] = (double)(float)ops[i].d;
    }
    const int64_t inner = shape[rank - 1];
    float *dst = o->data.f;
    /* add, sub, mul, div of two tensors: bin_d's expression written out, no call per element */
    int bop = fd == bin_d && n == 2 && src[0] && src[1] ? ((const BinC *)c)->op : -1;
    if (bop > B_DIV) bop = -1;
    const double alpha = bop >= 0 ? ((const BinC *)c)->alpha : 0.0;
    for (int64_t e = 0; e < o->numel;) {
      if (bop >= 0) {
        const float *a = src[0] + off[0], *b = src[1] + off[1];
        const int64_t sa = st[0][rank - 1], sb = st[1][rank - 1];
        float *d = dst + e;
        switch (bop) {
        case B_ADD:
          for (int64_t j = 0; j < inner; j++) d[j] = (float)((double)a[j * sa] + alpha * (double)b[j * sb]);
          break;
        case B_SUB:
          for (int64_t j = 0; j < inner; j++) d[j] = (float)((double)a[j * sa] - alpha * (double)b[j * sb]);
          break;
        case B_MUL:
          for (int64_t j = 0; j < inner; j++) d[j] = (float)((double)a[j * sa] * (double)b[j * sb]);
          break;
        default:
          for (int64_t j = 0; j < inner; j++) d[j] = (float)((double)a[j * sa] / (double)b[j * sb]);
          break;
        }
        e += inner;
      } else {
        for (int64_t j = 0; j < inner; j++, e++) {
          double x[3];
          for (int i = 0; i < n; i++) x[i] = src[i] ? (double)src[i][off[i] + j * st[i][rank - 1]] : sc[i];
          dst[e] = (float)fd(x, c);
        }
      }
      bc_advance(rank - 1, shape, n, st, idx, off); /* the next row */
    }
    return o;
  }
  int err = 0;
  for (int64_t e = 0; e < o->numel; e++) {
    if (ip) {
      int64_t x[3];
      for (int i = 0; i < n; i++) x[i] = ops[i].t ? ox_tensor_get_i64(ops[i].t, off[i]) : ops[i].i;
      int64_t r = fi(x, c, &err);
      if (err) {
        ox_tensor_free(o);
        kfail(k, err == 1 ? "ZeroDivisionError: integer division by zero" : "integers to negative integer powers are not allowed");
        return NULL;
      }
      ox_tensor_set_i64(o, e, r);
    } else {
      double x[3];
      for (int i = 0; i < n; i++) x[i] = opmath(out_dt, ops[i].t ? ox_tensor_get(ops[i].t, off[i]) : ops[i].d);
      ox_tensor_set(o, e, fd(x, c));
    }
    bc_advance(rank, shape, n, st, idx, off);
  }
  return o;
}

/* ------------------------------------------------------------------ unary pointwise */

enum { U_TANH, U_SIGMOID, U_RELU, U_GELU, U_GELU_TANH, U_SILU, U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_COPY,
       U_HARDSWISH, U_HARDSIGMOID };

static double unary_d(const double *x, const void *c) {
  double v = x[0];
  switch (*(const int *)c) {
  case U_TANH: return tanh(v);
  case U_SIGMOID: return 1.0 / (1.0 + exp(-v));
  case U_RELU: return isnan(v) ? v : (v > 0.0 ? v : 0.0);
  case U_GELU: return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
  case U_GELU_TANH: {
    double inner = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
    return 0.5 * v * (1.0 + tanh(inner));
  }
  case U_SILU: return v / (1.0 + exp(-v));
  case U_NEG: return -v;
  case U_EXP: return exp(v);
  case U_LOG: return log(v);
  case U_SQRT: return sqrt(v);
  case U_RSQRT: return 1.0 / sqrt(v);
  case U_HARDSWISH: /* x * relu6(x + 3) / 6, NaN passing through as in torch */
  case U_HARDSIGMOID: {
    double r6 = isnan(v) ? v : v + 3.0 < 0.0 ? 0.0 : v + 3.0 > 6.0 ? 6.0 : v + 3.0;
    return *(const int *)c == U_HARDSWISH ? v * r6 / 6.0 : r6 / 6.0;
  }
  default: return v;
  }
}

static int64_t unary_i(const int64_t *x, const void *c, int *err) {
  (void)err;
  switch (*(const int *)c) {
  case U_RELU: return x[0] > 0 ? x[0] : 0;
  case U_NEG: return (int64_t)(0u - (uint64_t)x[0]);
  default: return x[0];
  }
}

static int unary(K *k, V *const *s, int op, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  OxDType dt = x->dtype;
  if (!is_float_dt(dt)) {
    switch (op) {
    case U_TANH: case U_SIGMOID: case U_EXP: case U_LOG: case U_SQRT: case U_RSQRT:
      dt = OX_DT_F32; /* torch promotes integer inputs of float functions to the default dtype */
      break;
    case U_NEG:
      if (dt == OX_DT_BOOL) return kfail(k, "negation of a bool tensor is not supported");
      break;
    case U_RELU:
      if (dt == OX_DT_BOOL) return kfail(k, "expected a numeric tensor, got b8");
      break;
    case U_COPY: break;
    default: return need_float(k, x, "self") ? 0 : -1;
    }
  }
  Opnd o = {.t = x};
  return ret_tensor(ewise(k, 1, &o, dt, unary_d, unary_i, &op), out);
}

static int k_tanh(K *k, V *const *s, V **out) { return unary(k, s, U_TANH, out); }
static int k_sigmoid(K *k, V *const *s, V **out) { return unary(k, s, U_SIGMOID, out); }
static int k_relu(K *k, V *const *s, V **out) { return unary(k, s, U_RELU, out); }
static int k_silu(K *k, V *const *s, V **out) { return unary(k, s, U_SILU, out); }
static int k_neg(K *k, V *const *s, V **out) { return unary(k, s, U_NEG, out); }
static int k_exp(K *k, V *const *s, V **out) { return unary(k, s, U_EXP, out); }
static int k_log(K *k, V *const *s, V **out) { return unary(k, s, U_LOG, out); }
static int k_sqrt(K *k, V *const *s, V **out) { return unary(k, s, U_SQRT, out); }
static int k_rsqrt(K *k, V *const *s, V **out) { return unary(k, s, U_RSQRT, out); }
static int k_copy(K *k, V *const *s, V **out) { return unary(k, s, U_COPY, out); }
static int k_identity(K *k, V *const *s, V **out) { return unary(k, s, U_COPY, out); }
static int k_hardswish(K *k, V *const *s, V **out) { return unary(k, s, U_HARDSWISH, out); }
static int k_hardsigmoid(K *k, V *const *s, V **out) { return unary(k, s, U_HARDSIGMOID, out); }

/* torchvision.ops.stochastic_depth(input, p, mode, training=True): drops whole rows or the whole
 * batch at random while training; an identity otherwise (and for p = 0). */
static int k_stochastic_depth(K *k, V *const *s, V **out) {
  double p;
  bool training = true;
  if (!get_num(k, s[1], "p", &p)) return -1;
  if (p < 0.0 || p > 1.0) return kfail(k, "drop probability has to be between 0 and 1, but got %g", p);
  if (s[2]->kind != OX_RT_STR || (strcmp(s[2]->s, "row") != 0 && strcmp(s[2]->s, "batch") != 0))
    return kfail(k, "mode has to be either 'batch' or 'row'");
  if (!is_none(s[3]) && !get_bool(k, s[3], "training", &training)) return -1;
  if (training && p != 0.0) return kfail(k, "random op (training=True, p=%g): cannot be reproduced", p);
  return unary(k, s, U_COPY, out);
}

static int k_gelu(K *k, V *const *s, V **out) {
  int op = U_GELU;
  if (!is_none(s[1])) {
    if (s[1]->kind != OX_RT_STR) return kfail(k, "approximate: expected a string, got %s", ox_rt_kind_name(s[1]->kind));
    if (strcmp(s[1]->s, "tanh") == 0)
      op = U_GELU_TANH;
    else if (strcmp(s[1]->s, "none") != 0)
      return kfail(k, "approximate: unknown value '%s' (expected 'none' or 'tanh')", s[1]->s);
  }
  return unary(k, s, op, out);
}

static int k_dropout(K *k, V *const *s, V **out) {
  double p = 0.5;
  bool training = true;
  if (!is_none(s[1]) && !get_num(k, s[1], "p", &p)) return -1;
  if (is_none(s[2]))
    training = !k->module_call;
  else if (!get_bool(k, s[2], "training", &training))
    return -1;
  /* An nn.Dropout module in a recorded graph runs in eval mode; the slot default
   * (training=True) belongs to F.dropout. */
  if (k->module_call && is_none(s[2])) training = false;
  if (training && p != 0.0) return kfail(k, "random op (training=True, p=%g): cannot be reproduced", p);
  return unary(k, s, U_COPY, out);
}

typedef struct ClampC {
  bool has_lo, has_hi;
} ClampC;

static double clamp_d(const double *x, const void *cv) {
  const ClampC *c = cv;
  double v = x[0];
  if (isnan(v)) return v;
  if (c->has_lo && (v < x[1] || isnan(x[1]))) v = x[1];
  if (c->has_hi && (x[2] < v || isnan(x[2]))) v = x[2];
  return v;
}

static int64_t clamp_i(const int64_t *x, const void *cv, int *err) {
  (void)err;
  const ClampC *c = cv;
  int64_t v = x[0];
  if (c->has_lo && v < x[1]) v = x[1];
  if (c->has_hi && x[2] < v) v = x[2];
  return v;
}

static int k_clamp(K *k, V *const *s, V **out) {
  Opnd o[3];
  memset(o, 0, sizeof o);
  if (!get_opnd(k, s[0], "self", &o[0])) return -1;
  if (!o[0].t) return kfail(k, "self: expected a tensor, got %s", ox_rt_kind_name(s[0]->kind));
  ClampC c = {!is_none(s[1]), !is_none(s[2])};
  if (!c.has_lo && !c.has_hi) return kfail(k, "at least one of 'min' or 'max' must not be None");
  if (c.has_lo && !get_opnd(k, s[1], "min", &o[1])) return -1;
  if (c.has_hi && !get_opnd(k, s[2], "max", &o[2])) return -1;
  OxDType dt = result_type(o, 3);
  if (dt == OX_DT_BOOL) return kfail(k, "not supported for bool tensors");
  return ret_tensor(ewise(k, 3, o, dt, clamp_d, clamp_i, &c), out);
}

typedef struct NanC {
  double nan, pos, neg;
} NanC;

static double nan_d(const double *x, const void *cv) {
  const NanC *c = cv;
  if (isnan(x[0])) return c->nan;
  if (isinf(x[0])) return x[0] > 0 ? c->pos : c->neg;
  return x[0];
}

static int k_nan_to_num(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  if (!is_float_dt(x->dtype)) return unary(k, s, U_COPY, out);
  NanC c = {0.0, ox_dtype_max(x->dtype), -ox_dtype_max(x->dtype)};
  if (!is_none(s[1]) && !get_num(k, s[1], "nan", &c.nan)) return -1;
  if (!is_none(s[2]) && !get_num(k, s[2], "posinf", &c.pos)) return -1;
  if (!is_none(s[3]) && !get_num(k, s[3], "neginf", &c.neg)) return -1;
  Opnd o = {.t = x};
  return ret_tensor(ewise(k, 1, &o, x->dtype, nan_d, NULL, &c), out);
}

/* ------------------------------------------------------------------ binary pointwise */


static double floor_div_d(double a, double b) {
  /* torch's div_floor_floating: Python semantics, careful about the sign of the modulus */
  if (b == 0.0) return a / b;
  double mod = fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  double fd;
  if (div != 0.0) {
    fd = floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = copysign(0.0, a / b);
  }
  return fd;
}

static double bin_d(const double *x, const void *cv) {
  const BinC *c = cv;
  switch (c->op) {
  case B_ADD: return x[0] + c->alpha * x[1];
  case B_SUB: return x[0] - c->alpha * x[1];
  case B_MUL: return x[0] * x[1];
  case B_DIV: return x[0] / x[1];
  case B_DIV_TRUNC: return trunc(x[0] / x[1]);
  case B_DIV_FLOOR: return floor_div_d(x[0], x[1]);
  case B_POW: return pow(x[0], x[1]);
  case B_WHERE: return x[0] != 0.0 ? x[1] : x[2];
  default: return 0.0;
  }
}

static int64_t ipow(int64_t b, int64_t e) {
  uint64_t r = 1, base = (uint64_t)b;
  while (e > 0) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (int64_t)r;
}

static int64_t bin_i(const int64_t *x, const void *cv, int *err) {
  const BinC *c = cv;
  uint64_t a = (uint64_t)x[0], b = (uint64_t)x[1];
  switch (c->op) {
  case B_ADD: return (int64_t)(a + (uint64_t)c->ialpha * b);
  case B_SUB: return (int64_t)(a - (uint64_t)c->ialpha * b);
  case B_MUL: return (int64_t)(a * b);
  case B_DIV_TRUNC:
  case B_DIV_FLOOR: {
    if (x[1] == 0) {
      *err = 1;
      return 0;
    }
    if (x[1] == -1) return (int64_t)(0u - a); /* INT64_MIN / -1 wraps like torch */
    int64_t q = x[0] / x[1];
    if (c->op == B_DIV_FLOOR && (x[0] % x[1] != 0) && ((x[0] < 0) != (x[1] < 0))) q--;
    return q;
  }
  case B_POW:
    if (x[1] < 0) {
      if (x[0] == 1) return 1;
      if (x[0] == -1) return (x[1] & 1) ? -1 : 1;
      *err = 2;
      return 0;
    }
    return ipow(x[0], x[1]);
  case B_WHERE: return x[0] ? x[1] : x[2];
  default: return 0;
  }
}

/* Python scalar arithmetic (SymInt math such as size * 2, or constant folding). */
static int scalar_bin(K *k, int op, const V *a, const V *b, double alpha, V **out) {
  bool ints = a->kind != OX_RT_FLOAT && b->kind != OX_RT_FLOAT && alpha == floor(alpha);
  double x = ox_rt_scalar(a), y = ox_rt_scalar(b);
  if (ints && op != B_DIV) {
    int64_t xi[2] = {a->kind == OX_RT_INT ? a->u.i : a->u.b, b->kind == OX_RT_INT ? b->u.i : b->u.b};
    BinC c = {op, alpha, (int64_t)alpha};
    int err = 0;
    if (op == B_POW && xi[1] < 0) {
      *out = ox_rt_float(pow(x, y));
      return 0;
    }
    int64_t r = bin_i(xi, &c, &err);
    if (err) return kfail(k, "ZeroDivisionError: integer division by zero");
    *out = ox_rt_int(r);
    return 0;
  }
  if ((op == B_DIV || op == B_DIV_TRUNC || op == B_DIV_FLOOR) && y == 0.0)
    return kfail(k, "ZeroDivisionError: division by zero");
  BinC c = {op, alpha, 0};
  double xy[2] = {x, y};
  *out = ox_rt_float(bin_d(xy, &c));
  return 0;
}

static int binary(K *k, V *const *s, int op, const V *alpha_v, V **out) {
  Opnd o[2];
  if (!get_opnd(k, s[0], "self", &o[0]) || !get_opnd(k, s[1], "other", &o[1])) return -1;
  double alpha = 1.0;
  if (!is_none(alpha_v) && !get_num(k, alpha_v, "alpha", &alpha)) return -1;
  if (!o[0].t && !o[1].t) return scalar_bin(k, op, s[0], s[1], alpha, out);
  OxDType dt = result_type(o, 2);
  if (op == B_SUB && dt == OX_DT_BOOL) return kfail(k, "subtraction of bool tensors is not supported");
  if ((op == B_ADD || op == B_SUB) && is_int_store(dt) && alpha != floor(alpha))
    return kfail(k, "alpha must not be a floating point number for integral inputs");
  if (op == B_DIV && !is_float_dt(dt)) dt = OX_DT_F32; /* true division of integers */
  if (op == B_POW && dt == OX_DT_BOOL) dt = OX_DT_I64;
  BinC c = {op, alpha, (int64_t)alpha};
  return ret_tensor(ewise(k, 2, o, dt, bin_d, bin_i, &c), out);
}

static int k_add(K *k, V *const *s, V **out) { return binary(k, s, B_ADD, s[2], out); }
static int k_sub(K *k, V *const *s, V **out) { return binary(k, s, B_SUB, s[2], out); }
static int k_mul(K *k, V *const *s, V **out) { return binary(k, s, B_MUL, NULL, out); }
static int k_pow(K *k, V *const *s, V **out) { return binary(k, s, B_POW, NULL, out); }

static int k_div(K *k, V *const *s, V **out) {
  int op = B_DIV;
  if (!is_none(s[2])) {
    if (s[2]->kind != OX_RT_STR) return kfail(k, "rounding_mode: expected a string, got %s", ox_rt_kind_name(s[2]->kind));
    if (strcmp(s[2]->s, "trunc") == 0)
      op = B_DIV_TRUNC;
    else if (strcmp(s[2]->s, "floor") == 0)
      op = B_DIV_FLOOR;
    else
      return kfail(k, "rounding_mode: unknown value '%s' (expected 'trunc' or 'floor')", s[2]->s);
  }
  return binary(k, s, op, NULL, out);
}

static int k_where(K *k, V *const *s, V **out) {
  Opnd o[3];
  const OxTensor *cond = get_tensor(k, s[0], "condition");
  if (!cond) return -1;
  if (cond->dtype != OX_DT_BOOL) return kfail(k, "condition: expected a bool tensor, got %s", ox_dtype_abbr(cond->dtype));
  o[0] = (Opnd){.t = cond};
  if (!get_opnd(k, s[1], "self", &o[1]) || !get_opnd(k, s[2], "other", &o[2])) return -1;
  OxDType dt = result_type(o + 1, 2);
  if (!o[1].t && !o[2].t && dt == OX_DT_I64 && o[1].sk == OX_RT_FLOAT) dt = OX_DT_F32;
  BinC c = {B_WHERE, 1.0, 1};
  /* the condition must not be rounded through opmath: it is 0/1 either way */
  return ret_tensor(ewise(k, 3, o, dt, bin_d, bin_i, &c), out);
}

/* ------------------------------------------------------------------ comparisons, masks, constants */

/* The result of an elementwise op over broadcast operands o[0..n) (n <= 3): a new tensor of
 * dtype dt and the broadcast rank, shape and per-operand strides for bc_advance. */
static OxTensor *bc_result(K *k, const Opnd *o, int n, OxDType dt, int *rank, int64_t *shape, int64_t (*st)[MAXR]) {
  if (!bc_shape(k, n, o, rank, shape)) return NULL;
  OxTensor *r = knew(k, dt, *rank, shape);
  for (int i = 0; r && i < n; i++)
    if (o[i].t) bc_strides(o[i].t, *rank, st[i]);
    else memset(st[i], 0, sizeof st[i]);
  return r;
}

enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };

static bool cmp_d(int op, double a, double b) {
  switch (op) {
  case C_EQ: return a == b;
  case C_NE: return a != b; /* NaN != NaN */
  case C_LT: return a < b;
  case C_LE: return a <= b;
  case C_GT: return a > b;
  default: return a >= b;
  }
}

static bool cmp_i(int op, int64_t a, int64_t b) {
  switch (op) {
  case C_EQ: return a == b;
  case C_NE: return a != b;
  case C_LT: return a < b;
  case C_LE: return a <= b;
  case C_GT: return a > b;
  default: return a >= b;
  }
}

/* eq / ne / lt / le / gt / ge with broadcasting: the operands are compared in their promoted
 * dtype (exactly for integers and bools), the result is bool; two Python numbers give a bool. */
static int compare(K *k, V *const *s, int op, V **out) {
  Opnd o[2];
  if (!get_opnd(k, s[0], "self", &o[0]) || !get_opnd(k, s[1], "other", &o[1])) return -1;
  OxDType dt = result_type(o, 2);
  if (!o[0].t && !o[1].t) {
    bool ints = o[0].sk != OX_RT_FLOAT && o[1].sk != OX_RT_FLOAT;
    *out = ox_rt_bool(ints ? cmp_i(op, o[0].i, o[1].i) : cmp_d(op, o[0].d, o[1].d));
    return 0;
  }
  int rank = 0;
  int64_t shape[MAXR] = {0}, st[3][MAXR], off[3] = {0, 0, 0}, idx[MAXR] = {0};
  OxTensor *r = bc_result(k, o, 2, OX_DT_BOOL, &rank, shape, st);
  if (!r) return -1;
  bool ints = is_int_store(dt);
  for (int64_t e = 0; e < r->numel; e++) {
    bool v;
    if (ints) {
      int64_t a = o[0].t ? ox_tensor_get_i64(o[0].t, off[0]) : o[0].i, b = o[1].t ? ox_tensor_get_i64(o[1].t, off[1]) : o[1].i;
      v = cmp_i(op, a, b);
    } else {
      double a = opmath(dt, o[0].t ? ox_tensor_get(o[0].t, off[0]) : o[0].d);
      double b = opmath(dt, o[1].t ? ox_tensor_get(o[1].t, off[1]) : o[1].d);
      v = cmp_d(op, a, b);
    }
    ox_tensor_set_i64(r, e, v);
    bc_advance(rank, shape, 2, st, idx, off);
  }
  return ret_tensor(r, out);
}

static int k_eq(K *k, V *const *s, V **out) { return compare(k, s, C_EQ, out); }
static int k_ne(K *k, V *const *s, V **out) { return compare(k, s, C_NE, out); }
static int k_lt(K *k, V *const *s, V **out) { return compare(k, s, C_LT, out); }
static int k_le(K *k, V *const *s, V **out) { return compare(k, s, C_LE, out); }
static int k_gt(K *k, V *const *s, V **out) { return compare(k, s, C_GT, out); }
static int k_ge(K *k, V *const *s, V **out) { return compare(k, s, C_GE, out); }

/* logical_not: bool, True where x == 0; bitwise_not (~x): logical for bool, ~ for integers,
 * an error for floats */
static int not_kernel(K *k, V *const *s, bool logical, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  if (!logical && is_float_dt(x->dtype))
    return kfail(k, "takes bools or integers, not %s (torch refuses floating point too)", ox_dtype_abbr(x->dtype));
  bool to_bool = logical || x->dtype == OX_DT_BOOL;
  OxTensor *o = knew(k, to_bool ? OX_DT_BOOL : x->dtype, x->rank, x->shape);
  if (!o) return -1;
  for (int64_t i = 0; i < x->numel; i++) {
    if (to_bool)
      ox_tensor_set_i64(o, i, is_float_dt(x->dtype) ? ox_tensor_get(x, i) == 0.0 : ox_tensor_get_i64(x, i) == 0);
    else
      ox_tensor_set_i64(o, i, ~ox_tensor_get_i64(x, i));
  }
  return ret_tensor(o, out);
}

static int k_logical_not(K *k, V *const *s, V **out) { return not_kernel(k, s, true, out); }
static int k_bitwise_not(K *k, V *const *s, V **out) { return not_kernel(k, s, false, out); }

/* bitwise_and / or / xor: bools logically, integers bitwise, broadcast; the promoted dtype */
static int bits_kernel(K *k, V *const *s, int op, V **out) {
  Opnd o[2];
  if (!get_opnd(k, s[0], "self", &o[0]) || !get_opnd(k, s[1], "other", &o[1])) return -1;
  OxDType dt = result_type(o, 2);
  if (!is_int_store(dt) || (!o[0].t && o[0].sk == OX_RT_FLOAT) || (!o[1].t && o[1].sk == OX_RT_FLOAT))
    return kfail(k, "takes bools or integers, not %s (torch refuses floating point too)", ox_dtype_abbr(dt));
  if (!o[0].t && !o[1].t) {
    int64_t a = o[0].i, b = o[1].i, r = op == 0 ? a & b : op == 1 ? a | b : a ^ b;
    *out = o[0].sk == OX_RT_BOOL && o[1].sk == OX_RT_BOOL ? ox_rt_bool(r != 0) : ox_rt_int(r);
    return 0;
  }
  int rank = 0;
  int64_t shape[MAXR] = {0}, st[3][MAXR], off[3] = {0, 0, 0}, idx[MAXR] = {0};
  OxTensor *r = bc_result(k, o, 2, dt, &rank, shape, st);
  if (!r) return -1;
  for (int64_t e = 0; e < r->numel; e++) {
    int64_t a = o[0].t ? ox_tensor_get_i64(o[0].t, off[0]) : o[0].i, b = o[1].t ? ox_tensor_get_i64(o[1].t, off[1]) : o[1].i;
    int64_t v = op == 0 ? a & b : op == 1 ? a | b : a ^ b;
    ox_tensor_set_i64(r, e, dt == OX_DT_BOOL ? v != 0 : v);
    bc_advance(rank, shape, 2, st, idx, off);
  }
  return ret_tensor(r, out);
}

static int k_bitwise_and(K *k, V *const *s, V **out) { return bits_kernel(k, s, 0, out); }
static int k_bitwise_or(K *k, V *const *s, V **out) { return bits_kernel(k, s, 1, out); }
static int k_bitwise_xor(K *k, V *const *s, V **out) { return bits_kernel(k, s, 2, out); }

/* masked_fill(self, mask, value): value where the bool mask (broadcast to self's shape) is set,
 * in self's dtype; value a number or a 0-dim tensor */
static int k_masked_fill(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self"), *m = x ? get_tensor(k, s[1], "mask") : NULL;
  if (!m) return -1;
  if (m->dtype != OX_DT_BOOL) return kfail(k, "mask: expected a bool tensor, got %s", ox_dtype_abbr(m->dtype));
  Opnd v;
  if (!get_opnd(k, s[2], "value", &v)) return -1;
  if (v.t && v.t->rank != 0) return kfail(k, "value: only a 0-dimensional tensor is supported, got %d dims", v.t->rank);
  if (!v.t && v.sk == OX_RT_FLOAT && !is_float_dt(x->dtype))
    return kfail(k, "value cannot be converted to type %s without overflow", ox_dtype_abbr(x->dtype));
  Opnd ops[2] = {{.t = x}, {.t = m}};
  int rank = 0;
  int64_t shape[MAXR] = {0}, st[3][MAXR], off[3] = {0, 0, 0}, idx[MAXR] = {0};
  if (!bc_shape(k, 2, ops, &rank, shape)) return -1;
  if (rank != x->rank || ox_shape_numel(rank, shape) != x->numel) {
    char a[128], b[128];
    shape_str(m->rank, m->shape, a, sizeof a);
    shape_str(x->rank, x->shape, b, sizeof b);
    return kfail(k, "mask %s must broadcast to self's shape %s", a, b);
  }
  OxTensor *o = knew(k, x->dtype, x->rank, x->shape);
  if (!o) return -1;
  copy_elems(o, 0, x, 0, x->numel);
  bc_strides(m, rank, st[1]);
  memset(st[0], 0, sizeof st[0]);
  bool ip = is_int_store(x->dtype);
  int64_t vi = v.t ? ox_tensor_get_i64(v.t, 0) : v.i;
  double vd = v.t ? ox_tensor_get(v.t, 0) : v.d;
  for (int64_t e = 0; e < o->numel; e++) {
    if (ox_tensor_get_i64(m, off[1])) {
      if (ip) ox_tensor_set_i64(o, e, vi);
      else ox_tensor_set(o, e, vd);
    }
    bc_advance(rank, shape, 2, st, idx, off);
  }
  return ret_tensor(o, out);
}

/* triu / tril(self, diagonal): the last two dims' upper (j - i >= diagonal) or lower
 * (j - i <= diagonal) triangle kept, the rest 0 */
static int tri_kernel(K *k, V *const *s, bool upper, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dg = 0;
  if (!x || (!is_none(s[1]) && !get_int(k, s[1], "diagonal", &dg))) return -1;
  if (x->rank < 2) return kfail(k, "input tensor must have at least 2 dimensions");
  OxTensor *o = knew(k, x->dtype, x->rank, x->shape);
  if (!o) return -1;
  copy_elems(o, 0, x, 0, x->numel);
  int64_t R = x->shape[x->rank - 2], C = x->shape[x->rank - 1], mats = R * C != 0 ? x->numel / (R * C) : 0;
  bool ip = is_int_store(x->dtype);
  for (int64_t b = 0; b < mats; b++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) {
        if (!(upper ? j - i < dg : j - i > dg)) continue;
        if (ip) ox_tensor_set_i64(o, (b * R + i) * C + j, 0);
        else ox_tensor_set(o, (b * R + i) * C + j, 0.0);
      }
  return ret_tensor(o, out);
}

static int k_triu(K *k, V *const *s, V **out) { return tri_kernel(k, s, true, out); }
static int k_tril(K *k, V *const *s, V **out) { return tri_kernel(k, s, false, out); }

/* ones / zeros / full(size, [fill_value,] dtype): dtype None is float32 (full: bool, int64 or
 * float32 after fill_value's Python type) */
static int fill_kernel(K *k, V *const *s, int which, V **out) {
  int64_t sh[MAXR];
  int r = get_ints(k, s[0], "size", sh, MAXR);
  if (r < 0) return -1;
  for (int i = 0; i < r; i++)
    if (sh[i] < 0) return kfail(k, "negative dimension %lld", (long long)sh[i]);
  Opnd v = {0};
  v.sk = OX_RT_FLOAT, v.d = which == 1, v.i = which == 1;
  if (which == 2 && !get_opnd(k, s[1], "fill_value", &v)) return -1;
  if (v.t && v.t->rank != 0) return kfail(k, "fill_value: expected a number or a 0-dim tensor");
  OxDType dt;
  if (!get_dtype_opt(k, s[which == 2 ? 2 : 1], "dtype", &dt)) return -1;
  if (dt == OX_DT_UNKNOWN)
    dt = v.t ? v.t->dtype : v.sk == OX_RT_BOOL ? OX_DT_BOOL : v.sk == OX_RT_INT ? OX_DT_I64 : OX_DT_F32;
  OxTensor *o = knew(k, dt, r, sh);
  if (!o) return -1;
  bool ip = is_int_store(dt);
  int64_t vi = v.t ? ox_tensor_get_i64(v.t, 0) : v.i;
  double vd = v.t ? ox_tensor_get(v.t, 0) : v.d;
  for (int64_t i = 0; i < o->numel && (vi || vd != 0.0); i++) {
    if (ip) ox_tensor_set_i64(o, i, dt == OX_DT_BOOL ? (vd != 0.0 || vi != 0) : vi);
    else ox_tensor_set(o, i, vd);
  }
  return ret_tensor(o, out);
}

static int k_zeros(K *k, V *const *s, V **out) { return fill_kernel(k, s, 0, out); }
static int k_ones(K *k, V *const *s, V **out) { return fill_kernel(k, s, 1, out); }
static int k_full(K *k, V *const *s, V **out) { return fill_kernel(k, s, 2, out); }

/* arange(start, end, step, dtype): [start, end) by step (arange(n): start is the end); int64 when
 * every bound is an int, else float32; ceil((end - start) / step) elements */
static int k_arange(K *k, V *const *s, V **out) {
  Opnd b[3];
  if (!get_opnd(k, s[0], "start", &b[0])) return -1;
  if (is_none(s[1])) {
    b[1] = b[0];
    b[0] = (Opnd){.sk = OX_RT_INT, .d = 0, .i = 0};
  } else if (!get_opnd(k, s[1], "end", &b[1])) {
    return -1;
  }
  if (is_none(s[2])) b[2] = (Opnd){.sk = OX_RT_INT, .d = 1, .i = 1};
  else if (!get_opnd(k, s[2], "step", &b[2])) return -1;
  for (int i = 0; i < 3; i++)
    if (b[i].t) return kfail(k, "tensor bounds are not supported (Python numbers only)");
  OxDType dt;
  if (!get_dtype_opt(k, s[3], "dtype", &dt)) return -1;
  bool ints = b[0].sk != OX_RT_FLOAT && b[1].sk != OX_RT_FLOAT && b[2].sk != OX_RT_FLOAT;
  if (dt == OX_DT_UNKNOWN) dt = ints ? OX_DT_I64 : OX_DT_F32;
  if (b[2].d == 0.0) return kfail(k, "step must be nonzero");
  double n = ceil((b[1].d - b[0].d) / b[2].d);
  if (!(n >= 0.0)) return kfail(k, "upper bound and larger bound inconsistent with step sign");
  int64_t cnt = (int64_t)n;
  OxTensor *o = knew(k, dt, 1, &cnt);
  if (!o) return -1;
  for (int64_t i = 0; i < cnt; i++) {
    if (ints && is_int_store(dt)) ox_tensor_set_i64(o, i, b[0].i + i * b[2].i);
    else ox_tensor_set(o, i, b[0].d + (double)i * b[2].d);
  }
  return ret_tensor(o, out);
}

/* ------------------------------------------------------------------ linear algebra */

/* C[M,N] (+)= A[M,K] @ B; B is [K,N], or [N,K] when bt. Accumulates in double. */
static void gemm(const double *A, const double *B, double *C, int64_t M, int64_t Kd, int64_t N, bool bt) {
  if (bt) {
    /* C = A B^T as dot products of rows, four rows of A at a time: each row of B is read once per
     * four rows instead of once per row (B is often larger than the cache: vit's in_proj is 14 MB
     * of doubles), and the four sums are independent. Every dot product still adds its terms in
     * order p = 0, 1, ..., so the result is the same as one row at a time. */
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) {
      const double *a0 = A + i * Kd, *a1 = a0 + Kd, *a2 = a1 + Kd, *a3 = a2 + Kd;
      for (int64_t j = 0; j < N; j++) {
        const double *b = B + j * Kd;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (int64_t p = 0; p < Kd; p++) {
          double bp = b[p];
          s0 += a0[p] * bp, s1 += a1[p] * bp, s2 += a2[p] * bp, s3 += a3[p] * bp;
        }
        C[i * N + j] = s0, C[(i + 1) * N + j] = s1, C[(i + 2) * N + j] = s2, C[(i + 3) * N + j] = s3;
      }
    }
    for (; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0.0;
        const double *a = A + i * Kd, *b = B + j * Kd;
        for (int64_t p = 0; p < Kd; p++) acc += a[p] * b[p];
        C[i * N + j] = acc;
      }
    return;
  }
  for (int64_t i = 0; i < M; i++) {
    double *c = C + i * N;
    for (int64_t j = 0; j < N; j++) c[j] = 0.0;
    {
      for (int64_t p = 0; p < Kd; p++) {
        double a = A[i * Kd + p];
        const double *b = B + p * N;
        for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
      }
    }
  }
}

/* Batched matmul with torch.matmul's rules (1-D promotion, broadcast batch dims).
 * When addend is non-NULL: out = beta * addend + alpha * (a @ b), addend broadcast to out. */
static OxTensor *matmul_t(K *k, const OxTensor *a, const OxTensor *b, const OxTensor *addend, double beta,
                          double alpha) {
  char sa[128], sb[128];
  if (a->rank == 0 || b->rank == 0) {
    kfail(k, "both arguments need at least 1 dimension");
    return NULL;
  }
  if (!same_dtype(k, a, b)) return NULL;
  if (a->dtype == OX_DT_BOOL) {
    kfail(k, "not supported for bool tensors");
    return NULL;
  }
  int64_t M = a->rank == 1 ? 1 : a->shape[a->rank - 2];
  int64_t Ka = a->shape[a->rank - 1];
  int64_t Kb = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
  int64_t N = b->rank == 1 ? 1 : b->shape[b->rank - 1];
  if (Ka != Kb) {
    shape_str(a->rank, a->shape, sa, sizeof sa);
    shape_str(b->rank, b->shape, sb, sizeof sb);
    kfail(k, "shapes %s and %s cannot be multiplied", sa, sb);
    return NULL;
  }
  /* batch dims */
  int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
  int br = ba > bb ? ba : bb;
  int64_t bshape[MAXR], sta[MAXR], stb[MAXR];
  for (int d = 0; d < br; d++) {
    int da = d - (br - ba), db = d - (br - bb);
    int64_t xa = da >= 0 ? a->shape[da] : 1, xb = db >= 0 ? b->shape[db] : 1;
    if (xa != xb && xa != 1 && xb != 1) {
      shape_str(a->rank, a->shape, sa, sizeof sa);
      shape_str(b->rank, b->shape, sb, sizeof sb);
      kfail(k, "batch dims of %s and %s cannot be broadcast", sa, sb);
      return NULL;
    }
    bshape[d] = xa > xb ? xa : xb;
    if (xa == 0 || xb == 0) bshape[d] = 0;
  }
  /* batch strides in units of matrices */
  {
    int64_t s = 1;
    for (int d = br - 1; d >= 0; d--) {
      int da = d - (br - ba);
      sta[d] = (da < 0 || a->shape[da] == 1) ? 0 : s;
      if (da >= 0) s *= a->shape[da];
    }
    s = 1;
    for (int d = br - 1; d >= 0; d--) {
      int db = d - (br - bb);
      stb[d] = (db < 0 || b->shape[db] == 1) ? 0 : s;
      if (db >= 0) s *= b->shape[db];
    }
  }
  int64_t oshape[MAXR];
  int orank = 0;
  for (int d = 0; d < br; d++) oshape[orank++] = bshape[d];
  if (a->rank > 1) oshape[orank++] = M;
  if (b->rank > 1) oshape[orank++] = N;
  OxTensor *o = knew(k, a->dtype, orank, oshape);
  if (!o) return NULL;
  double *A = to_doubles(k, a), *B = to_doubles(k, b), *C = malloc(nz(M * N) * sizeof *C);
  double *D = addend ? to_doubles(k, addend) : NULL;
  int64_t dst[MAXR];
  if (addend) {
    /* addend broadcasts against the output */
    if (addend->rank > orank) {
      free(A), free(B), free(C), free(D);
      ox_tensor_free(o);
      kfail(k, "self of rank %d cannot be broadcast to the result of rank %d", addend->rank, orank);
      return NULL;
    }
    for (int d = 0; d < addend->rank; d++) {
      int od = orank - addend->rank + d;
      if (addend->shape[d] != 1 && addend->shape[d] != oshape[od]) {
        shape_str(addend->rank, addend->shape, sa, sizeof sa);
        shape_str(orank, oshape, sb, sizeof sb);
        free(A), free(B), free(C), free(D);
        ox_tensor_free(o);
        kfail(k, "self %s cannot be broadcast to %s", sa, sb);
        return NULL;
      }
    }
    bc_strides(addend, orank, dst);
  }
  if (!A || !B || !C || (addend && !D)) {
    free(A), free(B), free(C), free(D);
    ox_tensor_free(o);
    kfail(k, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < a->numel; i++) A[i] = opmath(a->dtype, A[i]);
  for (int64_t i = 0; i < b->numel; i++) B[i] = opmath(b->dtype, B[i]);
  int64_t nb = ox_shape_numel(br, bshape);
  int64_t bidx[MAXR] = {0};
  int64_t oidx[MAXR];
  for (int64_t bi = 0; bi < nb; bi++) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < br; d++) {
      oa += bidx[d] * sta[d];
      ob += bidx[d] * stb[d];
    }
    gemm(A + oa * M * Ka, B + ob * Kb * N, C, M, Ka, N, false);
    for (int64_t e = 0; e < M * N; e++) {
      int64_t flat = bi * M * N + e;
      double v = C[e];
      if (addend) {
        /* flat -> output multi-index -> addend offset */
        int64_t rem = flat, off = 0;
        for (int d = orank - 1; d >= 0; d--) {
          oidx[d] = oshape[d] ? rem % oshape[d] : 0;
          rem = oshape[d] ? rem / oshape[d] : 0;
          off += oidx[d] * dst[d];
        }
        double dv = opmath(a->dtype, D[off]);
        v = (beta == 0.0 ? 0.0 : beta * dv) + alpha * v;
      } else if (alpha != 1.0) {
        v *= alpha;
      }
      ox_tensor_set(o, flat, v);
    }
    for (int d = br - 1; d >= 0; d--) {
      if (++bidx[d] < bshape[d]) break;
      bidx[d] = 0;
    }
  }
  free(A), free(B), free(C), free(D);
  return o;
}

static bool need_rank(K *k, const OxTensor *t, int rank, const char *what) {
  if (t->rank == rank) return true;
  char b[128];
  shape_str(t->rank, t->shape, b, sizeof b);
  kfail(k, "%s must be %d-D, got shape %s", what, rank, b);
  return false;
}

static int k_mm(K *k, V *const *s, V **out) {
  const OxTensor *a = get_tensor(k, s[0], "self"), *b = a ? get_tensor(k, s[1], "mat2") : NULL;
  if (!b || !need_rank(k, a, 2, "self") || !need_rank(k, b, 2, "mat2")) return -1;
  return ret_tensor(matmul_t(k, a, b, NULL, 0, 1), out);
}

static int k_bmm(K *k, V *const *s, V **out) {
  const OxTensor *a = get_tensor(k, s[0], "self"), *b = a ? get_tensor(k, s[1], "mat2") : NULL;
  if (!b || !need_rank(k, a, 3, "self") || !need_rank(k, b, 3, "mat2")) return -1;
  if (a->shape[0] != b->shape[0]) return kfail(k, "batch sizes %lld and %lld differ", (long long)a->shape[0], (long long)b->shape[0]);
  return ret_tensor(matmul_t(k, a, b, NULL, 0, 1), out);
}

static int k_matmul(K *k, V *const *s, V **out) {
  const OxTensor *a = get_tensor(k, s[0], "self"), *b = a ? get_tensor(k, s[1], "other") : NULL;
  if (!b) return -1;
  return ret_tensor(matmul_t(k, a, b, NULL, 0, 1), out);
}

static int addmm_like(K *k, V *const *s, int rank, V **out) {
  const OxTensor *c = get_tensor(k, s[0], "self");
  const OxTensor *a = c ? get_tensor(k, s[1], rank == 2 ? "mat1" : "batch1") : NULL;
  const OxTensor *b = a ? get_tensor(k, s[2], rank == 2 ? "mat2" : "batch2") : NULL;
  double beta = 1, alpha = 1;
  if (!b || !need_rank(k, a, rank, rank == 2 ? "mat1" : "batch1") ||
      !need_rank(k, b, rank, rank == 2 ? "mat2" : "batch2"))
    return -1;
  if (rank == 3 && a->shape[0] != b->shape[0])
    return kfail(k, "batch sizes %lld and %lld differ", (long long)a->shape[0], (long long)b->shape[0]);
  if (!is_none(s[3]) && !get_num(k, s[3], "beta", &beta)) return -1;
  if (!is_none(s[4]) && !get_num(k, s[4], "alpha", &alpha)) return -1;
  if (!same_dtype(k, c, a)) return -1;
  return ret_tensor(matmul_t(k, a, b, c, beta, alpha), out);
}

static int k_addmm(K *k, V *const *s, V **out) { return addmm_like(k, s, 2, out); }
static int k_baddbmm(K *k, V *const *s, V **out) { return addmm_like(k, s, 3, out); }

/* x[..., in] @ w[out, in].T + b[out] */
static OxTensor *linear_t(K *k, const OxTensor *x, const OxTensor *w, const OxTensor *b) {
  char sx[128], sw[128];
  if (x->rank < 1 || w->rank < 1 || w->rank > 2) {
    shape_str(x->rank, x->shape, sx, sizeof sx);
    shape_str(w->rank, w->shape, sw, sizeof sw);
    kfail(k, "input %s and weight %s: weight must be 1-D or 2-D", sx, sw);
    return NULL;
  }
  if (!same_dtype(k, x, w) || (b && !same_dtype(k, x, b))) return NULL;
  int64_t in = x->shape[x->rank - 1];
  int64_t outf = w->rank == 2 ? w->shape[0] : 1;
  int64_t win = w->shape[w->rank - 1];
  if (in != win) {
    shape_str(x->rank, x->shape, sx, sizeof sx);
    shape_str(w->rank, w->shape, sw, sizeof sw);
    kfail(k, "input %s and weight %s: in_features differ", sx, sw);
    return NULL;
  }
  if (b && !(b->numel == outf || b->numel == 1)) {
    kfail(k, "bias has %lld elements, expected %lld", (long long)b->numel, (long long)outf);
    return NULL;
  }
  int64_t oshape[MAXR];
  int orank = x->rank - 1;
  memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)orank);
  if (w->rank == 2) oshape[orank++] = outf;
  OxTensor *o = knew(k, x->dtype, orank, oshape);
  if (!o) return NULL;
  int64_t rows = in ? x->numel / in : ox_shape_numel(x->rank - 1, x->shape);
  double *X = to_doubles(k, x), *W = to_doubles(k, w), *C = malloc(nz(rows * outf) * sizeof *C);
  if (!X || !W || !C) {
    free(X), free(W), free(C);
    ox_tensor_free(o);
    kfail(k, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < x->numel; i++) X[i] = opmath(x->dtype, X[i]);
  for (int64_t i = 0; i < w->numel; i++) W[i] = opmath(w->dtype, W[i]);
  gemm(X, W, C, rows, in, outf, true);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < outf; j++) {
      double v = C[r * outf + j];
      if (b) v += opmath(b->dtype, ox_tensor_get(b, b->numel == 1 ? 0 : j));
      ox_tensor_set(o, r * outf + j, v);
    }
  free(X), free(W), free(C);
  return o;
}

static int k_linear(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input"), *w = x ? get_tensor(k, s[1], "weight") : NULL;
  if (!w) return -1;
  const OxTensor *b = NULL;
  if (!is_none(s[2]) && !(b = get_tensor(k, s[2], "bias"))) return -1;
  return ret_tensor(linear_t(k, x, w, b), out);
}

static const V *seq_item(const V *v, uint32_t i) {
  return (v && (v->kind == OX_RT_LIST || v->kind == OX_RT_TUPLE) && i < v->n) ? v->u.items[i] : NULL;
}

static bool is_seq(const V *v) { return v && (v->kind == OX_RT_LIST || v->kind == OX_RT_TUPLE); }

static int k_grouped_mm(K *k, V *const *s, V **out) {
  if (!is_seq(s[0]) || !is_seq(s[1])) return kfail(k, "inputs and weights must be lists of tensors");
  uint32_t n = s[0]->n;
  if (s[1]->n != n) return kfail(k, "%u inputs but %u weights", n, s[1]->n);
  bool has_b = !is_none(s[2]);
  if (has_b && (!is_seq(s[2]) || s[2]->n != n)) return kfail(k, "biases must be None or a list of %u entries", n);
  V *res = ox_rt_seq(OX_RT_TUPLE, n);
  for (uint32_t i = 0; i < n; i++) {
    char what[32];
    snprintf(what, sizeof what, "inputs[%u]", i);
    const OxTensor *x = get_tensor(k, seq_item(s[0], i), what);
    snprintf(what, sizeof what, "weights[%u]", i);
    const OxTensor *w = x ? get_tensor(k, seq_item(s[1], i), what) : NULL;
    const OxTensor *b = NULL;
    if (w && has_b && !is_none(seq_item(s[2], i))) {
      snprintf(what, sizeof what, "biases[%u]", i);
      b = get_tensor(k, seq_item(s[2], i), what);
      if (!b) w = NULL;
    }
    OxTensor *o = w ? linear_t(k, x, w, b) : NULL;
    if (!o) {
      ox_rt_unref(res);
      return -1;
    }
    res->u.items[i] = ox_rt_tensor(o);
  }
  *out = res;
  return 0;
}

/* ------------------------------------------------------------------ normalization */

static int layer_norm(K *k, V *const *s, bool native, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x || !need_float(k, x, "input")) return -1;
  int64_t ns[MAXR];
  int nn = get_ints(k, s[1], "normalized_shape", ns, MAXR);
  if (nn < 0) return -1;
  if (nn > x->rank) return kfail(k, "normalized_shape has %d dims but input has rank %d", nn, x->rank);
  for (int i = 0; i < nn; i++)
    if (x->shape[x->rank - nn + i] != ns[i]) {
      char a[128], b[128];
      shape_str(nn, ns, a, sizeof a);
      shape_str(x->rank, x->shape, b, sizeof b);
      return kfail(k, "normalized_shape %s does not match the trailing dims of input %s", a, b);
    }
  const OxTensor *w = NULL, *b = NULL;
  if (!is_none(s[2]) && !(w = get_tensor(k, s[2], "weight"))) return -1;
  if (!is_none(s[3]) && !(b = get_tensor(k, s[3], "bias"))) return -1;
  double eps = 1e-5;
  if (!is_none(s[4]) && !get_num(k, s[4], "eps", &eps)) return -1;
  int64_t D = ox_shape_numel(nn, ns);
  if ((w && w->numel != D) || (b && b->numel != D)) return kfail(k, "weight/bias must have %lld elements", (long long)D);
  int64_t rows = D ? x->numel / D : 0;
  OxTensor *o = knew(k, x->dtype, x->rank, x->shape);
  OxTensor *mt = NULL, *rt = NULL;
  if (o && native) {
    int64_t st[MAXR];
    memcpy(st, x->shape, sizeof st);
    for (int i = x->rank - nn; i < x->rank; i++) st[i] = 1;
    mt = knew(k, x->dtype, x->rank, st);
    rt = mt ? knew(k, x->dtype, x->rank, st) : NULL;
    if (!rt) {
      ox_tensor_free(o);
      ox_tensor_free(mt);
      return -1;
    }
  }
  if (!o) return -1;
  bool f32 = x->dtype == OX_DT_F32 && (!w || w->dtype == OX_DT_F32) && (!b || b->dtype == OX_DT_F32);
  for (int64_t r = 0; r < rows && f32; r++) { /* the loop below, reading float32 buffers directly */
    const float *xr = x->data.f + r * D;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; j++) mean += (double)xr[j];
    mean /= (double)D;
    for (int64_t j = 0; j < D; j++) {
      double d = (double)xr[j] - mean;
      var += d * d;
    }
    var /= (double)D;
    double rstd = 1.0 / sqrt(var + eps);
    float *orow = o->data.f + r * D;
    for (int64_t j = 0; j < D; j++) {
      double v = ((double)xr[j] - mean) * rstd;
      if (w) v *= (double)w->data.f[j];
      if (b) v += (double)b->data.f[j];
      orow[j] = (float)v;
    }
    if (mt) {
      ox_tensor_set(mt, r, mean);
      ox_tensor_set(rt, r, rstd);
    }
  }
  for (int64_t r = 0; r < rows && !f32; r++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; j++) mean += ox_tensor_get(x, r * D + j);
    mean /= (double)D;
    for (int64_t j = 0; j < D; j++) {
      double d = ox_tensor_get(x, r * D + j) - mean;
      var += d * d;
    }
    var /= (double)D;
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < D; j++) {
      double v = (ox_tensor_get(x, r * D + j) - mean) * rstd;
      if (w) v *= ox_tensor_get(w, j);
      if (b) v += ox_tensor_get(b, j);
      ox_tensor_set(o, r * D + j, v);
    }
    if (mt) {
      ox_tensor_set(mt, r, mean);
      ox_tensor_set(rt, r, rstd);
    }
  }
  if (!native) return ret_tensor(o, out);
  V *res = ox_rt_seq(OX_RT_TUPLE, 3);
  res->u.items[0] = ox_rt_tensor(o);
  res->u.items[1] = ox_rt_tensor(mt);
  res->u.items[2] = ox_rt_tensor(rt);
  *out = res;
  return 0;
}

static int k_layer_norm(K *k, V *const *s, V **out) { return layer_norm(k, s, false, out); }
static int k_native_layer_norm(K *k, V *const *s, V **out) { return layer_norm(k, s, true, out); }

/* batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps) */
static int k_batch_norm(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x || !need_float(k, x, "input")) return -1;
  if (x->rank < 2) return kfail(k, "input must have at least 2 dims");
  const OxTensor *rm = NULL, *rv = NULL, *w = NULL, *b = NULL;
  if (!is_none(s[1]) && !(rm = get_tensor(k, s[1], "running_mean"))) return -1;
  if (!is_none(s[2]) && !(rv = get_tensor(k, s[2], "running_var"))) return -1;
  if (!is_none(s[3]) && !(w = get_tensor(k, s[3], "weight"))) return -1;
  if (!is_none(s[4]) && !(b = get_tensor(k, s[4], "bias"))) return -1;
  bool training = false;
  if (!is_none(s[5]) && !get_bool(k, s[5], "training", &training)) return -1;
  if (k->module_call && is_none(s[5])) training = false;
  double eps = 1e-5;
  if (!is_none(s[7]) && !get_num(k, s[7], "eps", &eps)) return -1;
  if (!training && (!rm || !rv)) return kfail(k, "running_mean and running_var are required when training=False");
  int64_t C = x->shape[1], N = x->shape[0];
  int64_t inner = N * C > 0 ? x->numel / (N * C) : 0;
  const OxTensor *chk[4] = {rm, rv, w, b};
  for (int i = 0; i < 4; i++)
    if (chk[i] && chk[i]->numel != C) return kfail(k, "per-channel tensors must have %lld elements", (long long)C);
  OxTensor *o = knew(k, x->dtype, x->rank, x->shape);
  if (!o) return -1;
  for (int64_t c = 0; c < C; c++) {
    double mean, var;
    if (training) {
      double sum = 0, sq = 0, cnt = (double)(N * inner);
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < inner; i++) sum += ox_tensor_get(x, (n * C + c) * inner + i);
      mean = cnt ? sum / cnt : 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < inner; i++) {
          double d = ox_tensor_get(x, (n * C + c) * inner + i) - mean;
          sq += d * d;
        }
      var = cnt ? sq / cnt : 0; /* biased, as used for normalization */
    } else {
      mean = ox_tensor_get(rm, c);
      var = ox_tensor_get(rv, c);
    }
    double inv = 1.0 / sqrt(var + eps);
    double sc = w ? ox_tensor_get(w, c) : 1.0, sh = b ? ox_tensor_get(b, c) : 0.0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t p = (n * C + c) * inner + i;
        ox_tensor_set(o, p, (ox_tensor_get(x, p) - mean) * inv * sc + sh);
      }
  }
  if (k->outputs != 3) return ret_tensor(o, out);
  /* aten._native_batch_norm_legit_no_training: (out, save_mean, save_rstd); in eval mode
   * torch's CPU kernel returns empty save tensors */
  int64_t zero = 0;
  OxTensor *m = knew(k, x->dtype, 1, &zero), *r = m ? knew(k, x->dtype, 1, &zero) : NULL;
  if (!r) {
    ox_tensor_free(o);
    ox_tensor_free(m);
    return -1;
  }
  V *res = ox_rt_seq(OX_RT_TUPLE, 3);
  res->u.items[0] = ox_rt_tensor(o);
  res->u.items[1] = ox_rt_tensor(m);
  res->u.items[2] = ox_rt_tensor(r);
  *out = res;
  return 0;
}

/* ------------------------------------------------------------------ reductions */

/* dims: None / [] -> all; int or list -> those. Marks red[d]. */
static bool reduce_dims(K *k, const V *v, int rank, bool *red) {
  for (int d = 0; d < MAXR; d++) red[d] = false;
  int64_t dims[MAXR];
  int n = 0;
  if (!is_none(v)) {
    n = get_ints(k, v, "dim", dims, MAXR);
    if (n < 0) return false;
  }
  if (n == 0) {
    for (int d = 0; d < rank; d++) red[d] = true;
    return true;
  }
  for (int i = 0; i < n; i++) {
    int d;
    if (!norm_dim(k, dims[i], rank, &d)) return false;
    if (rank && red[d]) return kfail(k, "dim %d appears multiple times in the list of dims", d), false;
    if (rank) red[d] = true;
  }
  return true;
}

static int reduce(K *k, V *const *s, bool mean, V **out) {
  const OxTensor *x0 = get_tensor(k, s[0], "self");
  if (!x0) return -1;
  bool red[MAXR], keep = false;
  if (!reduce_dims(k, s[1], x0->rank, red)) return -1;
  if (!is_none(s[2]) && !get_bool(k, s[2], "keepdim", &keep)) return -1;
  OxDType dt;
  if (!get_dtype_opt(k, s[3], "dtype", &dt)) return -1;
  if (dt == OX_DT_UNKNOWN) {
    dt = x0->dtype;
    if (!is_float_dt(dt)) {
      if (mean) return kfail(k, "could not infer output dtype: input dtype must be floating point, got %s", ox_dtype_abbr(dt));
      dt = OX_DT_I64;
    }
  } else if (mean && !is_float_dt(dt)) {
    return kfail(k, "dtype must be floating point, got %s", ox_dtype_abbr(dt));
  }
  int64_t oshape[MAXR], ostr[MAXR], full[MAXR];
  int orank = 0;
  for (int d = 0; d < x0->rank; d++) {
    full[d] = red[d] ? 1 : x0->shape[d];
    if (!red[d] || keep) oshape[orank++] = full[d];
  }
  OxTensor *o = knew(k, dt, orank, oshape);
  if (!o) return -1;
  /* strides of the kept-dims layout, 0 for reduced dims */
  cstrides(x0->rank, full, ostr);
  for (int d = 0; d < x0->rank; d++)
    if (red[d]) ostr[d] = 0;
  bool ip = is_int_store(dt);
  double *acc = ip ? NULL : calloc((size_t)(o->numel ? o->numel : 1), sizeof *acc);
  int64_t *iacc = ip ? calloc((size_t)(o->numel ? o->numel : 1), sizeof *iacc) : NULL;
  if (!acc && !iacc) {
    ox_tensor_free(o);
    return kfail(k, "out of memory");
  }
  int64_t idx[MAXR] = {0}, p = 0;
  for (int64_t e = 0; e < x0->numel; e++) {
    if (ip)
      iacc[p] = (int64_t)((uint64_t)iacc[p] + (uint64_t)ox_tensor_get_i64(x0, e));
    else
      acc[p] += opmath(dt, ox_tensor_get(x0, e));
    for (int d = x0->rank - 1; d >= 0; d--) {
      idx[d]++;
      p += ostr[d];
      if (idx[d] < x0->shape[d]) break;
      p -= ostr[d] * x0->shape[d];
      idx[d] = 0;
    }
  }
  int64_t cnt = 1;
  for (int d = 0; d < x0->rank; d++)
    if (red[d]) cnt *= x0->shape[d];
  for (int64_t i = 0; i < o->numel; i++) {
    if (ip)
      ox_tensor_set_i64(o, i, iacc[i]);
    else
      ox_tensor_set(o, i, mean ? acc[i] / (double)cnt : acc[i]);
  }
  free(acc);
  free(iacc);
  return ret_tensor(o, out);
}

static int k_sum(K *k, V *const *s, V **out) { return reduce(k, s, false, out); }
static int k_mean(K *k, V *const *s, V **out) { return reduce(k, s, true, out); }

static int k_softmax(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim;
  if (!x || !get_int(k, s[1], "dim", &dim)) return -1;
  OxDType dt = OX_DT_UNKNOWN;
  if (s[2] && s[2]->kind == OX_RT_BOOL) { /* aten._softmax(self, dim, half_to_float) */
    if (s[2]->u.b) dt = OX_DT_F32;
  } else if (!get_dtype_opt(k, s[2], "dtype", &dt)) {
    return -1;
  }
  if (dt == OX_DT_UNKNOWN) dt = x->dtype;
  if (!is_float_dt(dt)) return kfail(k, "expected a floating-point tensor, got %s", ox_dtype_abbr(dt));
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  OxTensor *o = knew(k, dt, x->rank, x->shape);
  if (!o) return -1;
  int64_t n = x->rank ? x->shape[d] : 1, inner = 1, outer = 1;
  for (int i = d + 1; i < x->rank; i++) inner *= x->shape[i];
  for (int i = 0; i < d; i++) outer *= x->shape[i];
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      int64_t base = a * n * inner + c;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; j++) {
        double v = opmath(dt, ox_tensor_get(x, base + j * inner));
        if (v > mx || isnan(v)) mx = v;
      }
      double sum = 0;
      for (int64_t j = 0; j < n; j++) sum += exp(opmath(dt, ox_tensor_get(x, base + j * inner)) - mx);
      for (int64_t j = 0; j < n; j++)
        ox_tensor_set(o, base + j * inner, exp(opmath(dt, ox_tensor_get(x, base + j * inner)) - mx) / sum);
    }
  return ret_tensor(o, out);
}

/* ------------------------------------------------------------------ split / cat plumbing */

static OxTensor *narrow_t(K *k, const OxTensor *x, int dim, int64_t start, int64_t len) {
  VDesc v;
  vd_init(&v, x);
  v.off = start * v.st[dim];
  v.shape[dim] = len;
  return vd_gather(k, x, &v);
}

static int split_sizes_out(K *k, const OxTensor *x, int d, const int64_t *sizes, int n, V **out) {
  V *res = ox_rt_seq(OX_RT_TUPLE, (uint32_t)n);
  int64_t start = 0;
  for (int i = 0; i < n; i++) {
    OxTensor *t = narrow_t(k, x, d, start, sizes[i]);
    if (!t) {
      ox_rt_unref(res);
      return -1;
    }
    res->u.items[i] = ox_rt_tensor(t);
    start += sizes[i];
  }
  *out = res;
  return 0;
}

#define MAX_SPLITS 4096

static int do_split(K *k, const OxTensor *x, const V *sz, const V *dimv, bool by_count, V **out) {
  int64_t dim = 0;
  if (!is_none(dimv) && !get_int(k, dimv, "dim", &dim)) return -1;
  int d;
  if (x->rank == 0) return kfail(k, "cannot split a 0-dim tensor");
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  int64_t n = x->shape[d];
  int64_t *sizes = malloc(MAX_SPLITS * sizeof *sizes);
  int cnt = 0;
  if (is_seq(sz)) {
    cnt = get_ints(k, sz, "split_sizes", sizes, MAX_SPLITS);
    if (cnt < 0) {
      free(sizes);
      return -1;
    }
    int64_t total = 0;
    for (int i = 0; i < cnt; i++) {
      if (sizes[i] < 0) {
        free(sizes);
        return kfail(k, "split sizes must be non-negative");
      }
      total += sizes[i];
    }
    if (total != n) {
      free(sizes);
      return kfail(k, "split sizes sum to %lld but dim %d has size %lld", (long long)total, d, (long long)n);
    }
  } else {
    int64_t v;
    if (!get_int(k, sz, by_count ? "chunks" : "split_size", &v)) {
      free(sizes);
      return -1;
    }
    int64_t each = v;
    if (by_count) {
      if (v <= 0) {
        free(sizes);
        return kfail(k, "chunks must be greater than 0, got %lld", (long long)v);
      }
      each = (n + v - 1) / v;
    } else if (v < 0) {
      free(sizes);
      return kfail(k, "split_size must be non-negative, got %lld", (long long)v);
    }
    if (each == 0) {
      if (n != 0) {
        free(sizes);
        return kfail(k, "split_size 0 on a non-empty dim");
      }
      sizes[cnt++] = 0;
    } else {
      for (int64_t st = 0; st < n; st += each) {
        if (cnt == MAX_SPLITS) {
          free(sizes);
          return kfail(k, "more than %d pieces", MAX_SPLITS);
        }
        sizes[cnt++] = n - st < each ? n - st : each;
      }
      if (n == 0) sizes[cnt++] = 0;
    }
  }
  int rc = split_sizes_out(k, x, d, sizes, cnt, out);
  free(sizes);
  return rc;
}

static int k_split(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  return x ? do_split(k, x, s[1], s[2], false, out) : -1;
}

static int k_split_with_sizes(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  if (!is_seq(s[1])) return kfail(k, "split_sizes: expected a list of ints, got %s", s[1] ? ox_rt_kind_name(s[1]->kind) : "nothing");
  return do_split(k, x, s[1], s[2], false, out);
}

static int k_chunk(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  return x ? do_split(k, x, s[1], s[2], true, out) : -1;
}

static OxTensor *select_t(K *k, const OxTensor *x, int d, int64_t idx) {
  if (idx < -x->shape[d] || idx >= x->shape[d]) {
    kfail(k, "index %lld is out of bounds for dimension %d with size %lld", (long long)idx, d, (long long)x->shape[d]);
    return NULL;
  }
  if (idx < 0) idx += x->shape[d];
  VDesc v;
  vd_init(&v, x);
  v.off = idx * v.st[d];
  for (int i = d; i < v.rank - 1; i++) {
    v.shape[i] = v.shape[i + 1];
    v.st[i] = v.st[i + 1];
  }
  v.rank--;
  return vd_gather(k, x, &v);
}

static int k_unbind(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim = 0;
  if (!x || (!is_none(s[1]) && !get_int(k, s[1], "dim", &dim))) return -1;
  if (x->rank == 0) return kfail(k, "cannot unbind a 0-dim tensor");
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  if (x->shape[d] > MAX_SPLITS) return kfail(k, "more than %d pieces", MAX_SPLITS);
  V *res = ox_rt_seq(OX_RT_TUPLE, (uint32_t)x->shape[d]);
  for (int64_t i = 0; i < x->shape[d]; i++) {
    OxTensor *t = select_t(k, x, d, i);
    if (!t) {
      ox_rt_unref(res);
      return -1;
    }
    res->u.items[i] = ox_rt_tensor(t);
  }
  *out = res;
  return 0;
}

/* Collects the tensors of a list argument. Returns count or -1. */
static int tensor_list(K *k, const V *v, const char *what, const OxTensor ***out) {
  if (!is_seq(v)) {
    kfail(k, "%s: expected a list of tensors, got %s", what, v ? ox_rt_kind_name(v->kind) : "nothing");
    return -1;
  }
  const OxTensor **ts = ox_xcalloc(v->n ? v->n : 1, sizeof *ts);
  for (uint32_t i = 0; i < v->n; i++) {
    const V *e = v->u.items[i];
    if (e && e->kind == OX_RT_TENSOR) {
      ts[i] = e->u.t;
      continue;
    }
    char w[48]; /* the element's label, formatted only for the error */
    snprintf(w, sizeof w, "%s[%u]", what, i);
    get_tensor(k, e, w);
    free(ts);
    return -1;
  }
  *out = ts;
  return (int)v->n;
}

/* einsum(equation, operands): every output element sums, over the subscripts not in the
 * output, the product of the operands' elements (accumulated in double, stored once). */
static int k_einsum(K *k, V *const *s, V **out) {
  if (s[0]->kind != OX_RT_STR) return kfail(k, "equation: expected a string, got %s", ox_rt_kind_name(s[0]->kind));
  const OxTensor **ts;
  int n = tensor_list(k, s[1], "operands", &ts);
  if (n < 0) return -1;
  if (n == 0 || n > OX_EINSUM_MAX_OPS) {
    free(ts);
    return kfail(k, "%d operands (1 to %d supported)", n, OX_EINSUM_MAX_OPS);
  }
  int ranks[OX_EINSUM_MAX_OPS];
  for (int i = 0; i < n; i++) ranks[i] = ts[i]->rank;
  OxEinsum e;
  char err[160];
  if (!ox_einsum_parse(s[0]->s, (uint32_t)n, ranks, &e, err, sizeof err)) {
    free(ts);
    return kfail(k, "%s", err);
  }
  /* every subscript once: the output's first, then the summed ones */
  char letters[128];
  int64_t size[128];
  int nl = 0;
  bool known[128] = {false};
  for (int i = 0; i < e.out_rank; i++) letters[nl++] = e.out[i];
  for (int i = 0; i < n; i++)
    for (int d = 0; d < e.rank[i]; d++) {
      unsigned char ch = (unsigned char)e.sub[i][d];
      if (known[ch]) {
        if (size[ch] != ts[i]->shape[d]) {
          free(ts);
          return kfail(k, "subscript '%c' has sizes %lld and %lld", ch, (long long)size[ch], (long long)ts[i]->shape[d]);
        }
        continue;
      }
      known[ch] = true;
      size[ch] = ts[i]->shape[d];
      if (!memchr(e.out, ch, (size_t)e.out_rank)) letters[nl++] = (char)ch;
    }
  int64_t oshape[OX_EINSUM_MAX_RANK];
  for (int i = 0; i < e.out_rank; i++) oshape[i] = size[(unsigned char)e.out[i]];
  OxTensor *o = knew(k, ts[0]->dtype, e.out_rank, oshape);
  double *D[OX_EINSUM_MAX_OPS] = {NULL};
  int rc = 0;
  if (!o) {
    rc = -1;
    goto done;
  }
  for (int t = 0; t < n; t++)
    if (!(D[t] = to_doubles(k, ts[t]))) {
      rc = kfail(k, "out of memory");
      goto done;
    }
  int64_t inner = 1;
  for (int i = e.out_rank; i < nl; i++) inner *= size[(unsigned char)letters[i]];
  /* each operand's stride per letter, in the order of letters[] (0 when it lacks the letter) */
  int64_t st[OX_EINSUM_MAX_OPS][128], sz[128];
  memset(st, 0, sizeof st);
  for (int i = 0; i < nl; i++) sz[i] = size[(unsigned char)letters[i]];
  for (int t = 0; t < n; t++) {
    int64_t m = 1;
    for (int d = e.rank[t] - 1; d >= 0; d--) {
      for (int i = 0; i < nl; i++)
        if (letters[i] == e.sub[t][d]) st[t][i] = m;
      m *= ts[t]->shape[d];
    }
  }
  /* Output elements in order, each the sum over the summed letters in row-major order (the
   * order of the terms is the reference's: one product per index, added left to right); both
   * index spaces are walked as odometers that move each operand's offset by its stride. */
  int64_t idx[128] = {0}, base[OX_EINSUM_MAX_OPS] = {0}, off[OX_EINSUM_MAX_OPS];
  for (int64_t of = 0; of < o->numel; of++) {
    double acc = 0;
    for (int t = 0; t < n; t++) off[t] = base[t];
    if (n == 2 && nl > e.out_rank) {
      /* two operands (attention's q k^T, p v): the last summed letter as a plain loop */
      int last = nl - 1;
      int64_t s0 = st[0][last], s1 = st[1][last], len = sz[last];
      const double *d0 = D[0], *d1 = D[1];
      for (int64_t in = 0; in < inner; in += len) {
        const double *a = d0 + off[0], *b = d1 + off[1];
        for (int64_t j = 0; j < len; j++) acc += a[j * s0] * b[j * s1]; /* = (1 * a) * b, as below */
        for (int i = last - 1; i >= e.out_rank; i--) {
          for (int t = 0; t < 2; t++) off[t] += st[t][i];
          if (++idx[i] < sz[i]) break;
          for (int t = 0; t < 2; t++) off[t] -= st[t][i] * sz[i];
          idx[i] = 0;
        }
      }
    } else {
      for (int64_t in = 0; in < inner; in++) {
        double prod = 1;
        for (int t = 0; t < n; t++) prod *= D[t][off[t]];
        acc += prod;
        for (int i = nl - 1; i >= e.out_rank; i--) {
          for (int t = 0; t < n; t++) off[t] += st[t][i];
          if (++idx[i] < sz[i]) break;
          for (int t = 0; t < n; t++) off[t] -= st[t][i] * sz[i];
          idx[i] = 0;
        }
      }
    }
    ox_tensor_set(o, of, acc);
    for (int i = e.out_rank - 1; i >= 0; i--) {
      for (int t = 0; t < n; t++) base[t] += st[t][i];
      if (++idx[i] < sz[i]) break;
      for (int t = 0; t < n; t++) base[t] -= st[t][i] * sz[i];
      idx[i] = 0;
    }
  }
done:
  for (int t = 0; t < n; t++) free(D[t]);
  free(ts);
  if (rc != 0) {
    if (o) ox_tensor_free(o);
    return -1;
  }
  return ret_tensor(o, out);
}

static int k_cat(K *k, V *const *s, V **out) {
  const OxTensor **ts;
  int n = tensor_list(k, s[0], "tensors", &ts);
  if (n < 0) return -1;
  int64_t dim = 0;
  if (!is_none(s[1]) && !get_int(k, s[1], "dim", &dim)) {
    free(ts);
    return -1;
  }
  /* legacy: 1-D empty tensors are skipped */
  const OxTensor *ref = NULL;
  OxDType dt = OX_DT_UNKNOWN;
  for (int i = 0; i < n; i++) {
    dt = ox_dtype_promote(dt, ts[i]->dtype);
    if (!(ts[i]->rank == 1 && ts[i]->numel == 0) && !ref) ref = ts[i];
  }
  if (n == 0) {
    free(ts);
    return kfail(k, "expected a non-empty list of tensors");
  }
  if (!ref) ref = ts[0];
  int d;
  if (ref->rank == 0) {
    free(ts);
    return kfail(k, "zero-dimensional tensor cannot be concatenated");
  }
  if (!norm_dim(k, dim, ref->rank, &d)) {
    free(ts);
    return -1;
  }
  int64_t oshape[MAXR];
  memcpy(oshape, ref->shape, sizeof oshape);
  oshape[d] = 0;
  for (int i = 0; i < n; i++) {
    const OxTensor *t = ts[i];
    if (t->rank == 1 && t->numel == 0 && ref->rank != 1) continue;
    bool ok = t->rank == ref->rank;
    for (int j = 0; ok && j < t->rank; j++)
      if (j != d && t->shape[j] != ref->shape[j]) ok = false;
    if (!ok) {
      char a[128], b[128];
      shape_str(ref->rank, ref->shape, a, sizeof a);
      shape_str(t->rank, t->shape, b, sizeof b);
      free(ts);
      return kfail(k, "sizes of tensors must match except in dimension %d: %s vs %s", d, a, b);
    }
    oshape[d] += t->shape[d];
  }
  OxTensor *o = knew(k, dt, ref->rank, oshape);
  if (!o) {
    free(ts);
    return -1;
  }
  int64_t outer = 1, inner = 1;
  for (int j = 0; j < d; j++) outer *= oshape[j];
  for (int j = d + 1; j < ref->rank; j++) inner *= oshape[j];
  int64_t pos = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int i = 0; i < n; i++) {
      const OxTensor *t = ts[i];
      if (t->rank == 1 && t->numel == 0 && ref->rank != 1) continue;
      int64_t blk = t->shape[d] * inner;
      copy_elems(o, pos, t, a * blk, blk);
      pos += blk;
    }
  free(ts);
  return ret_tensor(o, out);
}

static int k_stack(K *k, V *const *s, V **out) {
  const OxTensor **ts;
  int n = tensor_list(k, s[0], "tensors", &ts);
  if (n < 0) return -1;
  if (n == 0) {
    free(ts);
    return kfail(k, "expected a non-empty list of tensors");
  }
  int64_t dim = 0;
  if (!is_none(s[1]) && !get_int(k, s[1], "dim", &dim)) {
    free(ts);
    return -1;
  }
  const OxTensor *ref = ts[0];
  OxDType dt = OX_DT_UNKNOWN;
  for (int i = 0; i < n; i++) {
    dt = ox_dtype_promote(dt, ts[i]->dtype);
    if (!ox_tensor_same_shape(ts[i], ref)) {
      char a[128], b[128];
      shape_str(ref->rank, ref->shape, a, sizeof a);
      shape_str(ts[i]->rank, ts[i]->shape, b, sizeof b);
      free(ts);
      return kfail(k, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d", a, b, i);
    }
  }
  int d;
  if (ref->rank + 1 > MAXR || !norm_dim(k, dim, ref->rank + 1, &d)) {
    free(ts);
    return ref->rank + 1 > MAXR ? kfail(k, "result rank exceeds %d", MAXR) : -1;
  }
  int64_t oshape[MAXR];
  for (int j = 0, r = 0; j <= ref->rank; j++) oshape[j] = j == d ? n : ref->shape[r++];
  OxTensor *o = knew(k, dt, ref->rank + 1, oshape);
  if (!o) {
    free(ts);
    return -1;
  }
  int64_t outer = 1, inner = 1;
  for (int j = 0; j < d; j++) outer *= ref->shape[j];
  for (int j = d; j < ref->rank; j++) inner *= ref->shape[j];
  int64_t pos = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int i = 0; i < n; i++) {
      copy_elems(o, pos, ts[i], a * inner, inner);
      pos += inner;
    }
  free(ts);
  return ret_tensor(o, out);
}

static void py_slice(int64_t n, bool has_start, int64_t start, bool has_stop, int64_t stop, int64_t step,
                     int64_t *ostart, int64_t *olen) {
  if (!has_start) start = 0;
  else if (start < 0) {
    start += n;
    if (start < 0) start = 0;
  } else if (start > n) start = n;
  if (!has_stop) stop = n;
  else if (stop < 0) {
    stop += n;
    if (stop < 0) stop = 0;
  } else if (stop > n) stop = n;
  *ostart = start;
  *olen = stop > start ? (stop - start + step - 1) / step : 0;
}

static int k_select(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim, idx;
  if (!x || !get_int(k, s[1], "dim", &dim) || !get_int(k, s[2], "index", &idx)) return -1;
  if (x->rank == 0) return kfail(k, "select() cannot be applied to a 0-dim tensor");
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  return ret_tensor(select_t(k, x, d, idx), out);
}

static int k_slice(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim = 0, start = 0, end = 0, step = 1;
  if (!x) return -1;
  if (!is_none(s[1]) && !get_int(k, s[1], "dim", &dim)) return -1;
  bool hs = !is_none(s[2]), he = !is_none(s[3]);
  if (hs && !get_int(k, s[2], "start", &start)) return -1;
  if (he && !get_int(k, s[3], "end", &end)) return -1;
  if (!is_none(s[4]) && !get_int(k, s[4], "step", &step)) return -1;
  if (step <= 0) return kfail(k, "slice step must be positive, got %lld", (long long)step);
  if (x->rank == 0) return kfail(k, "slice() cannot be applied to a 0-dim tensor");
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  int64_t st, len;
  py_slice(x->shape[d], hs, start, he, end, step, &st, &len);
  VDesc v;
  vd_init(&v, x);
  v.off = st * v.st[d];
  v.shape[d] = len;
  v.st[d] *= step;
  return ret_tensor(vd_gather(k, x, &v), out);
}

static int k_narrow(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim, start, len;
  if (!x || !get_int(k, s[1], "dim", &dim) || !get_int(k, s[2], "start", &start) || !get_int(k, s[3], "length", &len))
    return -1;
  if (x->rank == 0) return kfail(k, "narrow() cannot be applied to a 0-dim tensor");
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  int64_t n = x->shape[d];
  if (start < -n || start > n) return kfail(k, "start %lld out of range for dim %d of size %lld", (long long)start, d, (long long)n);
  if (start < 0) start += n;
  if (len < 0 || start + len > n)
    return kfail(k, "start (%lld) + length (%lld) exceeds dimension size (%lld)", (long long)start, (long long)len, (long long)n);
  return ret_tensor(narrow_t(k, x, d, start, len), out);
}

/* ------------------------------------------------------------------ getitem */

static int tensor_index(K *k, const OxTensor *x, const V *ix, V **out) {
  const V *items[64];
  int ni = 0;
  if (ix->kind == OX_RT_TUPLE) {
    if (ix->n > 64) return kfail(k, "too many indices");
    for (uint32_t i = 0; i < ix->n; i++) items[ni++] = ix->u.items[i];
  } else {
    items[ni++] = ix;
  }
  int consumed = 0, n_ell = 0;
  for (int i = 0; i < ni; i++) {
    const V *it = items[i];
    switch (it->kind) {
    case OX_RT_INT: case OX_RT_SLICE: case OX_RT_LIST: consumed++; break;
    case OX_RT_TENSOR: consumed += it->u.t->dtype == OX_DT_BOOL ? (it->u.t->rank ? it->u.t->rank : 1) : 1; break;
    case OX_RT_NONE: break;
    case OX_RT_ELLIPSIS: n_ell++; break;
    case OX_RT_BOOL: return kfail(k, "indexing with a Python bool is not supported");
    default: return kfail(k, "unsupported index of kind %s", ox_rt_kind_name(it->kind));
    }
  }
  if (n_ell > 1) return kfail(k, "an index can only have a single ellipsis");
  if (consumed > x->rank) return kfail(k, "too many indices for tensor of dimension %d", x->rank);
  VDesc src, o;
  vd_init(&src, x);
  o.rank = 0;
  o.off = 0;
  int in = 0;
  /* the single advanced (tensor) index */
  int adv_pos = -1, adv_rank = 0;
  int64_t adv_shape[MAXR], adv_st = 0, *adv_idx = NULL, adv_n = 0;
  for (int i = 0; i < ni; i++) {
    const V *it = items[i];
    if (o.rank >= MAXR && it->kind != OX_RT_INT) {
      free(adv_idx);
      return kfail(k, "result rank exceeds %d", MAXR);
    }
    switch (it->kind) {
    case OX_RT_INT: {
      int64_t n = src.shape[in], v = it->u.i;
      if (v < -n || v >= n) {
        free(adv_idx);
        return kfail(k, "index %lld is out of bounds for dimension %d with size %lld", (long long)v, in, (long long)n);
      }
      if (v < 0) v += n;
      o.off += v * src.st[in];
      in++;
      break;
    }
    case OX_RT_SLICE: {
      int64_t a = 0, b = 0, step = 1;
      const V *sa = it->u.items[0], *sb = it->u.items[1], *sc = it->u.items[2];
      if ((!is_none(sa) && !get_int(k, sa, "slice start", &a)) || (!is_none(sb) && !get_int(k, sb, "slice stop", &b)) ||
          (!is_none(sc) && !get_int(k, sc, "slice step", &step))) {
        free(adv_idx);
        return -1;
      }
      if (step <= 0) {
        free(adv_idx);
        return kfail(k, "step must be greater than zero");
      }
      int64_t st, len;
      py_slice(src.shape[in], !is_none(sa), a, !is_none(sb), b, step, &st, &len);
      o.off += st * src.st[in];
      o.shape[o.rank] = len;
      o.st[o.rank++] = src.st[in] * step;
      in++;
      break;
    }
    case OX_RT_NONE:
      o.shape[o.rank] = 1;
      o.st[o.rank++] = 0;
      break;
    case OX_RT_ELLIPSIS:
      for (int j = 0; j < x->rank - consumed; j++) {
        if (o.rank >= MAXR) {
          free(adv_idx);
          return kfail(k, "result rank exceeds %d", MAXR);
        }
        o.shape[o.rank] = src.shape[in];
        o.st[o.rank++] = src.st[in++];
      }
      break;
    default: { /* TENSOR or LIST: advanced index */
      if (adv_pos >= 0) {
        free(adv_idx);
        return kfail(k, "advanced indexing with more than one tensor index is not supported");
      }
      adv_pos = o.rank;
      if (it->kind == OX_RT_LIST) {
        adv_n = it->n;
        adv_rank = 1;
        adv_shape[0] = adv_n;
        adv_idx = ox_xcalloc((size_t)(adv_n ? adv_n : 1), sizeof *adv_idx);
        for (int64_t j = 0; j < adv_n; j++)
          if (!get_int(k, it->u.items[j], "index", &adv_idx[j])) {
            free(adv_idx);
            return -1;
          }
        adv_st = src.st[in];
      } else if (it->u.t->dtype == OX_DT_BOOL) {
        const OxTensor *m = it->u.t;
        int r = m->rank ? m->rank : 1;
        for (int j = 0; j < m->rank; j++)
          if (m->shape[j] != src.shape[in + j]) {
            free(adv_idx);
            return kfail(k, "the shape of the mask at index %d does not match the indexed tensor", j);
          }
        /* the masked dims must be jointly contiguous to be addressed as one flat dim */
        for (int j = 0; j + 1 < r && m->rank; j++)
          if (src.st[in + j] != src.st[in + j + 1] * src.shape[in + j + 1]) {
            free(adv_idx);
            return kfail(k, "boolean mask over non-contiguous dims is not supported");
          }
        if (m->rank == 0) {
          free(adv_idx);
          return kfail(k, "0-dim boolean mask index is not supported");
        }
        adv_idx = ox_xcalloc((size_t)(m->numel ? m->numel : 1), sizeof *adv_idx);
        adv_n = 0;
        for (int64_t j = 0; j < m->numel; j++)
          if (m->data.b[j]) adv_idx[adv_n++] = j;
        adv_rank = 1;
        adv_shape[0] = adv_n;
        adv_st = src.st[in + r - 1];
        in += r - 1; /* the loop's in++ below covers the last */
      } else {
        const OxTensor *t = it->u.t;
        if (!is_int_store(t->dtype)) {
          free(adv_idx);
          return kfail(k, "tensors used as indices must be long, int or bool tensors, got %s", ox_dtype_abbr(t->dtype));
        }
        adv_n = t->numel;
        adv_rank = t->rank;
        memcpy(adv_shape, t->shape, sizeof adv_shape);
        adv_idx = ox_xcalloc((size_t)(adv_n ? adv_n : 1), sizeof *adv_idx);
        for (int64_t j = 0; j < adv_n; j++) adv_idx[j] = ox_tensor_get_i64(t, j);
        adv_st = src.st[in];
      }
      if (it->kind == OX_RT_LIST || it->u.t->dtype != OX_DT_BOOL) {
        int64_t n = src.shape[in];
        for (int64_t j = 0; j < adv_n; j++) {
          if (adv_idx[j] < -n || adv_idx[j] >= n) {
            long long bad = (long long)adv_idx[j];
            free(adv_idx);
            return kfail(k, "index %lld is out of bounds for dimension %d with size %lld", bad, in, (long long)n);
          }
          if (adv_idx[j] < 0) adv_idx[j] += n;
        }
      }
      in++;
      break;
    }
    }
  }
  while (in < x->rank) {
    if (o.rank >= MAXR) {
      free(adv_idx);
      return kfail(k, "result rank exceeds %d", MAXR);
    }
    o.shape[o.rank] = src.shape[in];
    o.st[o.rank++] = src.st[in++];
  }
  if (adv_pos < 0) return ret_tensor(vd_gather(k, x, &o), out);
  /* result = o dims [0, adv_pos) + adv_shape + o dims [adv_pos, o.rank) */
  if (o.rank + adv_rank > MAXR) {
    free(adv_idx);
    return kfail(k, "result rank exceeds %d", MAXR);
  }
  int64_t rshape[MAXR];
  int rr = 0;
  for (int j = 0; j < adv_pos; j++) rshape[rr++] = o.shape[j];
  for (int j = 0; j < adv_rank; j++) rshape[rr++] = adv_shape[j];
  for (int j = adv_pos; j < o.rank; j++) rshape[rr++] = o.shape[j];
  OxTensor *res = knew(k, x->dtype, rr, rshape);
  if (!res) {
    free(adv_idx);
    return -1;
  }
  int64_t before = ox_shape_numel(adv_pos, o.shape), after = ox_shape_numel(o.rank - adv_pos, o.shape + adv_pos);
  VDesc pre = o, post = o;
  pre.rank = adv_pos;
  post.rank = o.rank - adv_pos;
  memmove(post.shape, o.shape + adv_pos, sizeof(int64_t) * (size_t)post.rank);
  memmove(post.st, o.st + adv_pos, sizeof(int64_t) * (size_t)post.rank);
  size_t es = esize(x->dtype);
  int64_t pos = 0;
  for (int64_t b = 0; b < before; b++) {
    int64_t offb = o.off, rem = b;
    for (int d = pre.rank - 1; d >= 0; d--) {
      offb += (rem % pre.shape[d]) * pre.st[d];
      rem /= pre.shape[d];
    }
    for (int64_t j = 0; j < adv_n; j++) {
      int64_t offj = offb + adv_idx[j] * adv_st;
      for (int64_t a = 0; a < after; a++) {
        int64_t off = offj, r2 = a;
        for (int d = post.rank - 1; d >= 0; d--) {
          off += (r2 % post.shape[d]) * post.st[d];
          r2 /= post.shape[d];
        }
        memcpy((char *)res->data.p + (size_t)pos * es, (const char *)x->data.p + (size_t)off * es, es);
        pos++;
      }
    }
  }
  free(adv_idx);
  return ret_tensor(res, out);
}

static int k_getitem(K *k, V *const *s, V **out) {
  const V *x = s[0], *ix = s[1];
  if (!x || !ix) return kfail(k, "missing operand");
  if (is_seq(x)) {
    if (ix->kind == OX_RT_INT || ix->kind == OX_RT_BOOL) {
      int64_t i = ix->kind == OX_RT_INT ? ix->u.i : ix->u.b, n = x->n;
      if (i < -n || i >= n) return kfail(k, "index %lld out of range for a %s of %lld items", (long long)i, ox_rt_kind_name(x->kind), (long long)n);
      if (i < 0) i += n;
      *out = ox_rt_ref(x->u.items[i]);
      return 0;
    }
    if (ix->kind == OX_RT_SLICE) {
      int64_t a = 0, b = 0, step = 1;
      const V *sa = ix->u.items[0], *sb = ix->u.items[1], *sc = ix->u.items[2];
      if ((!is_none(sa) && !get_int(k, sa, "slice start", &a)) || (!is_none(sb) && !get_int(k, sb, "slice stop", &b)) ||
          (!is_none(sc) && !get_int(k, sc, "slice step", &step)))
        return -1;
      if (step <= 0) return kfail(k, "negative or zero slice steps on sequences are not supported");
      int64_t st, len;
      py_slice(x->n, !is_none(sa), a, !is_none(sb), b, step, &st, &len);
      V *res = ox_rt_seq(x->kind, (uint32_t)len);
      for (int64_t j = 0; j < len; j++) res->u.items[j] = ox_rt_ref(x->u.items[st + j * step]);
      *out = res;
      return 0;
    }
    return kfail(k, "%s indices must be integers or slices, not %s", ox_rt_kind_name(x->kind), ox_rt_kind_name(ix->kind));
  }
  if (x->kind == OX_RT_TENSOR) return tensor_index(k, x->u.t, ix, out);
  return kfail(k, "cannot index a value of kind %s", ox_rt_kind_name(x->kind));
}

/* ------------------------------------------------------------------ shape / layout */

static int k_squeeze(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  bool sel[MAXR];
  if (is_none(s[1])) {
    for (int d = 0; d < MAXR; d++) sel[d] = true;
  } else {
    int64_t dims[MAXR];
    int n = get_ints(k, s[1], "dim", dims, MAXR);
    if (n < 0) return -1;
    for (int d = 0; d < MAXR; d++) sel[d] = false;
    for (int i = 0; i < n; i++) {
      int d;
      if (!norm_dim(k, dims[i], x->rank, &d)) return -1;
      sel[d] = true;
    }
  }
  int64_t sh[MAXR];
  int r = 0;
  for (int d = 0; d < x->rank; d++)
    if (!(sel[d] && x->shape[d] == 1)) sh[r++] = x->shape[d];
  return ret_tensor(reshaped_copy(k, x, r, sh), out);
}

static int k_unsqueeze(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim;
  if (!x || !get_int(k, s[1], "dim", &dim)) return -1;
  if (x->rank + 1 > MAXR) return kfail(k, "result rank exceeds %d", MAXR);
  int d;
  if (!norm_dim(k, dim, x->rank + 1, &d)) return -1;
  int64_t sh[MAXR];
  for (int j = 0, r = 0; j <= x->rank; j++) sh[j] = j == d ? 1 : x->shape[r++];
  return ret_tensor(reshaped_copy(k, x, x->rank + 1, sh), out);
}

/* view/reshape size list with at most one -1. */
static int view_like(K *k, const OxTensor *x, const V *sz, V **out) {
  int64_t sh[MAXR];
  int n = get_ints(k, sz, "size", sh, MAXR);
  if (n < 0) return -1;
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (sh[i] == -1) {
      if (infer >= 0) return kfail(k, "only one dimension can be inferred");
      infer = i;
    } else if (sh[i] < 0) {
      return kfail(k, "invalid shape dimension %lld", (long long)sh[i]);
    } else {
      if (sh[i] && prod > INT64_MAX / sh[i]) return kfail(k, "shape overflows");
      prod *= sh[i];
    }
  }
  if (infer >= 0) {
    if (prod == 0 || x->numel % prod != 0) {
      char a[128], b[128];
      shape_str(n, sh, a, sizeof a);
      shape_str(x->rank, x->shape, b, sizeof b);
      return kfail(k, "shape %s is invalid for input of shape %s", a, b);
    }
    sh[infer] = x->numel / prod;
  }
  return ret_tensor(reshaped_copy(k, x, n, sh), out);
}

static int k_view(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  return x ? view_like(k, x, s[1], out) : -1;
}

static int k_flatten(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t a = 0, b = -1;
  if (!x || (!is_none(s[1]) && !get_int(k, s[1], "start_dim", &a)) || (!is_none(s[2]) && !get_int(k, s[2], "end_dim", &b)))
    return -1;
  if (x->rank == 0) {
    int64_t one = 1;
    return ret_tensor(reshaped_copy(k, x, 1, &one), out);
  }
  int da, db;
  if (!norm_dim(k, a, x->rank, &da) || !norm_dim(k, b, x->rank, &db)) return -1;
  if (da > db) return kfail(k, "start_dim cannot come after end_dim");
  int64_t sh[MAXR];
  int r = 0;
  for (int d = 0; d < da; d++) sh[r++] = x->shape[d];
  int64_t p = 1;
  for (int d = da; d <= db; d++) p *= x->shape[d];
  sh[r++] = p;
  for (int d = db + 1; d < x->rank; d++) sh[r++] = x->shape[d];
  return ret_tensor(reshaped_copy(k, x, r, sh), out);
}

static int k_unflatten(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dim, sizes[MAXR];
  if (!x || !get_int(k, s[1], "dim", &dim)) return -1;
  int n = get_ints(k, s[2], "sizes", sizes, MAXR);
  if (n < 0) return -1;
  if (x->rank == 0) return kfail(k, "cannot unflatten a 0-dim tensor");
  int d;
  if (!norm_dim(k, dim, x->rank, &d)) return -1;
  if (x->rank - 1 + n > MAXR) return kfail(k, "result rank exceeds %d", MAXR);
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (sizes[i] == -1) {
      if (infer >= 0) return kfail(k, "only one dimension can be inferred");
      infer = i;
    } else {
      prod *= sizes[i];
    }
  }
  if (infer >= 0) {
    if (prod == 0 || x->shape[d] % prod) return kfail(k, "sizes do not match dim %d of size %lld", d, (long long)x->shape[d]);
    sizes[infer] = x->shape[d] / prod;
    prod *= sizes[infer];
  }
  if (prod != x->shape[d])
    return kfail(k, "provided sizes multiply to %lld but dim %d has size %lld", (long long)prod, d, (long long)x->shape[d]);
  int64_t sh[MAXR];
  int r = 0;
  for (int j = 0; j < d; j++) sh[r++] = x->shape[j];
  for (int j = 0; j < n; j++) sh[r++] = sizes[j];
  for (int j = d + 1; j < x->rank; j++) sh[r++] = x->shape[j];
  return ret_tensor(reshaped_copy(k, x, r, sh), out);
}

static int permute_t(K *k, const OxTensor *x, const int *perm, V **out) {
  VDesc v, src;
  vd_init(&src, x);
  v.rank = x->rank;
  v.off = 0;
  for (int i = 0; i < x->rank; i++) {
    v.shape[i] = src.shape[perm[i]];
    v.st[i] = src.st[perm[i]];
  }
  return ret_tensor(vd_gather(k, x, &v), out);
}

static int k_permute(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t dims[MAXR];
  if (!x) return -1;
  int n = get_ints(k, s[1], "dims", dims, MAXR);
  if (n < 0) return -1;
  if (n != x->rank) return kfail(k, "number of dims (%d) does not match the tensor rank (%d)", n, x->rank);
  int perm[MAXR];
  bool seen[MAXR] = {false};
  for (int i = 0; i < n; i++) {
    if (!norm_dim(k, dims[i], x->rank, &perm[i])) return -1;
    if (seen[perm[i]]) return kfail(k, "repeated dim %d in permute", perm[i]);
    seen[perm[i]] = true;
  }
  return permute_t(k, x, perm, out);
}

static int k_transpose(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t a, b;
  if (!x || !get_int(k, s[1], "dim0", &a) || !get_int(k, s[2], "dim1", &b)) return -1;
  int da, db, perm[MAXR];
  if (!norm_dim(k, a, x->rank, &da) || !norm_dim(k, b, x->rank, &db)) return -1;
  if (x->rank == 0) return k_copy(k, s, out);
  for (int i = 0; i < x->rank; i++) perm[i] = i;
  perm[da] = db;
  perm[db] = da;
  return permute_t(k, x, perm, out);
}

static int k_t(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  if (x->rank > 2) return kfail(k, "t() expects a tensor with <= 2 dimensions, but self is %dD", x->rank);
  if (x->rank < 2) return k_copy(k, s, out);
  int perm[2] = {1, 0};
  return permute_t(k, x, perm, out);
}

static int k_movedim(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t src[MAXR], dst[MAXR];
  if (!x) return -1;
  int ns = get_ints(k, s[1], "source", src, MAXR), nd = ns < 0 ? -1 : get_ints(k, s[2], "destination", dst, MAXR);
  if (nd < 0) return -1;
  if (ns != nd) return kfail(k, "source and destination must have the same number of dims (%d vs %d)", ns, nd);
  int perm[MAXR], sd[MAXR], dd[MAXR];
  bool used_src[MAXR] = {false}, used_dst[MAXR] = {false};
  for (int i = 0; i < ns; i++) {
    if (!norm_dim(k, src[i], x->rank, &sd[i]) || !norm_dim(k, dst[i], x->rank, &dd[i])) return -1;
    if (used_src[sd[i]] || used_dst[dd[i]]) return kfail(k, "repeated dim in source or destination");
    used_src[sd[i]] = used_dst[dd[i]] = true;
  }
  for (int i = 0; i < x->rank; i++) perm[i] = -1;
  for (int i = 0; i < ns; i++) perm[dd[i]] = sd[i];
  int next = 0;
  for (int i = 0; i < x->rank; i++) {
    if (perm[i] >= 0) continue;
    while (used_src[next]) next++;
    perm[i] = next++;
  }
  if (x->rank == 0) return k_copy(k, s, out);
  return permute_t(k, x, perm, out);
}

static int k_expand(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  int64_t sz[MAXR];
  if (!x) return -1;
  int n = get_ints(k, s[1], "size", sz, MAXR);
  if (n < 0) return -1;
  if (n < x->rank) return kfail(k, "the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)", n, x->rank);
  VDesc src, v;
  vd_init(&src, x);
  v.rank = n;
  v.off = 0;
  for (int i = 0; i < n; i++) {
    int td = i - (n - x->rank);
    if (td < 0) {
      if (sz[i] < 0) return kfail(k, "-1 is not allowed in a leading, non-existing dimension");
      v.shape[i] = sz[i];
      v.st[i] = 0;
    } else if (sz[i] == -1 || sz[i] == x->shape[td]) {
      v.shape[i] = x->shape[td];
      v.st[i] = src.st[td];
    } else if (x->shape[td] == 1 && sz[i] >= 0) {
      v.shape[i] = sz[i];
      v.st[i] = 0;
    } else {
      return kfail(k, "the expanded size (%lld) must match the existing size (%lld) at non-singleton dimension %d", (long long)sz[i], (long long)x->shape[td], i);
    }
  }
  return ret_tensor(vd_gather(k, x, &v), out);
}

/* ------------------------------------------------------------------ embeddings */

static bool check_indices(K *k, const OxTensor *ix, int64_t rows) {
  if (!is_int_store(ix->dtype) || ix->dtype == OX_DT_BOOL) {
    kfail(k, "indices must be an integer tensor, got %s", ox_dtype_abbr(ix->dtype));
    return false;
  }
  for (int64_t i = 0; i < ix->numel; i++) {
    int64_t v = ox_tensor_get_i64(ix, i);
    if (v < 0 || v >= rows) {
      kfail(k, "index %lld out of range for %lld rows", (long long)v, (long long)rows);
      return false;
    }
  }
  return true;
}

static int k_embedding(K *k, V *const *s, V **out) {
  const OxTensor *w = get_tensor(k, s[0], "weight"), *ix = w ? get_tensor(k, s[1], "indices") : NULL;
  if (!ix) return -1;
  if (w->rank != 2) return kfail(k, "weight must be 2-D");
  if (ix->rank + 1 > MAXR) return kfail(k, "result rank exceeds %d", MAXR);
  if (!check_indices(k, ix, w->shape[0])) return -1;
  int64_t sh[MAXR];
  memcpy(sh, ix->shape, sizeof(int64_t) * (size_t)ix->rank);
  sh[ix->rank] = w->shape[1];
  OxTensor *o = knew(k, w->dtype, ix->rank + 1, sh);
  if (!o) return -1;
  int64_t D = w->shape[1];
  for (int64_t i = 0; i < ix->numel; i++) copy_elems(o, i * D, w, ox_tensor_get_i64(ix, i) * D, D);
  return ret_tensor(o, out);
}

/* embedding_bag(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx) */
static int k_embedding_bag(K *k, V *const *s, V **out) {
  const OxTensor *w = get_tensor(k, s[0], "weight"), *ix = w ? get_tensor(k, s[1], "indices") : NULL;
  if (!ix) return -1;
  if (w->rank != 2) return kfail(k, "weight must be 2-D");
  int mode = 1; /* 0 sum, 1 mean, 2 max (aten numbering) */
  if (!is_none(s[3])) {
    if (s[3]->kind == OX_RT_STR) {
      if (strcmp(s[3]->s, "sum") == 0) mode = 0;
      else if (strcmp(s[3]->s, "mean") == 0) mode = 1;
      else if (strcmp(s[3]->s, "max") == 0) mode = 2;
      else return kfail(k, "mode: unknown value '%s'", s[3]->s);
    } else {
      int64_t m;
      if (!get_int(k, s[3], "mode", &m)) return -1;
      if (m < 0 || m > 2) return kfail(k, "mode: unknown value %lld", (long long)m);
      mode = (int)m;
    }
  }
  bool last = false;
  if (!is_none(s[5]) && !get_bool(k, s[5], "include_last_offset", &last)) return -1;
  int64_t pad = -1;
  bool has_pad = !is_none(s[6]);
  if (has_pad && !get_int(k, s[6], "padding_idx", &pad)) return -1;
  /* aten's padding_idx -1 means "none" (Python normalized negatives before calling it);
   * F.embedding_bag counts a negative padding_idx from the end */
  if (has_pad && pad < 0) {
    if (k->outputs == 4) has_pad = false;
    else pad += w->shape[0];
  }
  const OxTensor *psw = NULL;
  if (!is_none(s[4])) {
    if (!(psw = get_tensor(k, s[4], "per_sample_weights"))) return -1;
    if (mode != 0) return kfail(k, "per_sample_weights are only supported for mode='sum'");
    if (psw->numel != ix->numel) return kfail(k, "per_sample_weights must have the same number of elements as indices");
  }
  if (!check_indices(k, ix, w->shape[0])) return -1;
  int64_t nb, *starts;
  int64_t n = ix->numel;
  if (ix->rank == 2) {
    if (!is_none(s[2])) return kfail(k, "offsets must be None when indices are 2-D");
    nb = ix->shape[0];
    starts = ox_xcalloc((size_t)nb + 1, sizeof *starts);
    for (int64_t b = 0; b <= nb; b++) starts[b] = b * ix->shape[1];
  } else if (ix->rank == 1) {
    const OxTensor *off = get_tensor(k, s[2], "offsets");
    if (!off) return -1;
    if (off->rank != 1 || !is_int_store(off->dtype)) return kfail(k, "offsets must be a 1-D integer tensor");
    nb = last ? off->numel - 1 : off->numel;
    if (nb < 0) return kfail(k, "offsets must not be empty with include_last_offset=True");
    starts = ox_xcalloc((size_t)nb + 1, sizeof *starts);
    for (int64_t b = 0; b < nb; b++) starts[b] = ox_tensor_get_i64(off, b);
    starts[nb] = n;
    if (nb > 0 && starts[0] != 0) {
      free(starts);
      return kfail(k, "offsets[0] must be 0, got %lld", (long long)ox_tensor_get_i64(off, 0));
    }
    for (int64_t b = 0; b < nb; b++)
      if (starts[b] > starts[b + 1] || starts[b] < 0 || starts[b + 1] > n) {
        free(starts);
        return kfail(k, "offsets must be non-decreasing and within [0, %lld]", (long long)n);
      }
  } else {
    return kfail(k, "indices must be 1-D or 2-D");
  }
  int64_t D = w->shape[1];
  int64_t osh[2] = {nb, D};
  OxTensor *o = knew(k, w->dtype, 2, osh);
  if (!o) {
    free(starts);
    return -1;
  }
  OxTensor *o2b = NULL, *bsz = NULL, *maxi = NULL;
  if (k->outputs == 4) {
    int64_t nn = n, mi[2] = {nb, mode == 2 ? D : 0};
    o2b = knew(k, OX_DT_I64, 1, &nn);
    bsz = o2b ? knew(k, OX_DT_I64, 1, &nb) : NULL;
    maxi = bsz ? knew(k, OX_DT_I64, mode == 2 ? 2 : 1, mi) : NULL;
    if (!maxi) {
      ox_tensor_free(o), ox_tensor_free(o2b), ox_tensor_free(bsz);
      free(starts);
      return -1;
    }
  }
  double *acc = ox_xcalloc((size_t)(D ? D : 1), sizeof *acc);
  int64_t *arg = ox_xcalloc((size_t)(D ? D : 1), sizeof *arg);
  for (int64_t b = 0; b < nb; b++) {
    int64_t cnt = 0;
    for (int64_t j = 0; j < D; j++) {
      acc[j] = mode == 2 ? -INFINITY : 0.0;
      arg[j] = -1;
    }
    for (int64_t i = starts[b]; i < starts[b + 1]; i++) {
      if (o2b) ox_tensor_set_i64(o2b, i, b);
      int64_t row = ox_tensor_get_i64(ix, i);
      if (has_pad && row == pad) continue;
      cnt++;
      double sw = psw ? opmath(w->dtype, ox_tensor_get(psw, i)) : 1.0;
      for (int64_t j = 0; j < D; j++) {
        double v = opmath(w->dtype, ox_tensor_get(w, row * D + j));
        if (mode == 2) {
          if (arg[j] < 0 || v > acc[j] || isnan(v)) {
            acc[j] = v;
            arg[j] = row;
          }
        } else {
          acc[j] += sw * v;
        }
      }
    }
    for (int64_t j = 0; j < D; j++) {
      double v = acc[j];
      if (mode == 1) v = cnt ? v / (double)cnt : 0.0;
      if (mode == 2 && cnt == 0) v = 0.0;
      ox_tensor_set(o, b * D + j, v);
      if (maxi && mode == 2) ox_tensor_set_i64(maxi, b * D + j, arg[j] < 0 ? 0 : arg[j]);
    }
    if (bsz) ox_tensor_set_i64(bsz, b, cnt);
  }
  free(acc);
  free(arg);
  free(starts);
  if (k->outputs != 4) return ret_tensor(o, out);
  V *res = ox_rt_seq(OX_RT_TUPLE, 4);
  res->u.items[0] = ox_rt_tensor(o);
  res->u.items[1] = ox_rt_tensor(o2b);
  res->u.items[2] = ox_rt_tensor(bsz);
  res->u.items[3] = ox_rt_tensor(maxi);
  *out = res;
  return 0;
}

/* ------------------------------------------------------------------ convolution / pooling */

/* An int or a list of 1 or 2 ints -> pair. */
static bool get_pair(K *k, const V *v, const char *what, int64_t def, int64_t p[2]) {
  if (is_none(v) || (is_seq(v) && v->n == 0)) {
    p[0] = p[1] = def;
    return true;
  }
  int64_t t[MAXR];
  int n = get_ints(k, v, what, t, MAXR);
  if (n < 0) return false;
  if (n != 1 && n != 2) {
    kfail(k, "%s: expected 1 or 2 values, got %d", what, n);
    return false;
  }
  p[0] = t[0];
  p[1] = n == 2 ? t[1] : t[0];
  return true;
}

/* conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) */
static int k_conv2d(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input"), *w = x ? get_tensor(k, s[1], "weight") : NULL;
  if (!w) return -1;
  const OxTensor *b = NULL;
  if (!is_none(s[2]) && !(b = get_tensor(k, s[2], "bias"))) return -1;
  if (!need_float(k, x, "input") || !same_dtype(k, x, w) || (b && !same_dtype(k, x, b))) return -1;
  bool batched = x->rank == 4;
  if (x->rank != 3 && x->rank != 4) return kfail(k, "expected 3-D or 4-D input, got %d-D", x->rank);
  if (w->rank != 4) return kfail(k, "weight must be 4-D, got %d-D", w->rank);
  int64_t st[2], dl[2], pad[4];
  int64_t groups = 1;
  if (!get_pair(k, s[3], "stride", 1, st) || !get_pair(k, s[5], "dilation", 1, dl)) return -1;
  if (!is_none(s[6]) && !get_int(k, s[6], "groups", &groups)) return -1;
  int64_t N = batched ? x->shape[0] : 1, C = x->shape[batched], H = x->shape[batched + 1], W = x->shape[batched + 2];
  int64_t O = w->shape[0], Cg = w->shape[1], KH = w->shape[2], KW = w->shape[3];
  if (st[0] <= 0 || st[1] <= 0 || dl[0] <= 0 || dl[1] <= 0) return kfail(k, "stride and dilation must be positive");
  if (groups <= 0 || C != Cg * groups || O % groups)
    return kfail(k, "input has %lld channels; weight expects %lld x %lld groups (out channels %lld)", (long long)C,
                 (long long)Cg, (long long)groups, (long long)O);
  if (b && b->numel != O) return kfail(k, "bias must have %lld elements", (long long)O);
  if (s[4] && s[4]->kind == OX_RT_STR) {
    if (strcmp(s[4]->s, "valid") == 0) {
      pad[0] = pad[1] = pad[2] = pad[3] = 0;
    } else if (strcmp(s[4]->s, "same") == 0) {
      if (st[0] != 1 || st[1] != 1) return kfail(k, "padding='same' is not supported for strided convolutions");
      int64_t th = dl[0] * (KH - 1), tw = dl[1] * (KW - 1);
      pad[0] = th / 2, pad[1] = th - th / 2, pad[2] = tw / 2, pad[3] = tw - tw / 2;
    } else {
      return kfail(k, "padding: unknown value '%s'", s[4]->s);
    }
  } else {
    int64_t p[2];
    if (!get_pair(k, s[4], "padding", 0, p)) return -1;
    if (p[0] < 0 || p[1] < 0) return kfail(k, "negative padding is not supported");
    pad[0] = pad[1] = p[0], pad[2] = pad[3] = p[1];
  }
  int64_t OH = (H + pad[0] + pad[1] - dl[0] * (KH - 1) - 1) / st[0] + 1;
  int64_t OW = (W + pad[2] + pad[3] - dl[1] * (KW - 1) - 1) / st[1] + 1;
  if (H + pad[0] + pad[1] < dl[0] * (KH - 1) + 1 || W + pad[2] + pad[3] < dl[1] * (KW - 1) + 1)
    return kfail(k, "kernel size can't be greater than the padded input size");
  int64_t osh[4] = {N, O, OH, OW};
  OxTensor *o = batched ? knew(k, x->dtype, 4, osh) : knew(k, x->dtype, 3, osh + 1);
  if (!o) return -1;
  double *X = to_doubles(k, x), *Wt = to_doubles(k, w), *row = malloc(nz(OH * OW) * sizeof *row);
  if (!X || !Wt || !row) {
    free(X), free(Wt), free(row);
    ox_tensor_free(o);
    return kfail(k, "out of memory");
  }
  for (int64_t i = 0; i < x->numel; i++) X[i] = opmath(x->dtype, X[i]);
  for (int64_t i = 0; i < w->numel; i++) Wt[i] = opmath(w->dtype, Wt[i]);
  int64_t Og = O / groups;
  for (int64_t n = 0; n < N; n++)
    for (int64_t oc = 0; oc < O; oc++) {
      int64_t g = oc / Og;
      double bias = b ? opmath(b->dtype, ox_tensor_get(b, oc)) : 0.0;
      for (int64_t i = 0; i < OH * OW; i++) row[i] = 0.0;
      for (int64_t c = 0; c < Cg; c++) {
        const double *xin = X + ((n * C) + g * Cg + c) * H * W;
        for (int64_t kh = 0; kh < KH; kh++)
          for (int64_t kw = 0; kw < KW; kw++) {
            double wv = Wt[((oc * Cg + c) * KH + kh) * KW + kw];
            for (int64_t oh = 0; oh < OH; oh++) {
              int64_t ih = oh * st[0] - pad[0] + kh * dl[0];
              if (ih < 0 || ih >= H) continue;
              double *r = row + oh * OW;
              const double *xr = xin + ih * W;
              for (int64_t ow = 0; ow < OW; ow++) {
                int64_t iw = ow * st[1] - pad[2] + kw * dl[1];
                if (iw >= 0 && iw < W) r[ow] += wv * xr[iw];
              }
            }
          }
      }
      for (int64_t i = 0; i < OH * OW; i++) ox_tensor_set(o, (n * O + oc) * OH * OW + i, row[i] + bias);
    }
  free(X), free(Wt), free(row);
  return ret_tensor(o, out);
}

/* A 2-D pooling window's output sizes over x's last two dims, (in + 2p - d(k - 1) - 1) / s + 1,
 * rounded up with ceil_mode unless the last window would start in the right padding; sh gets
 * x's shape with them. */
static bool pool_out_shape(K *k, const OxTensor *x, const int64_t ks[2], const int64_t st[2], const int64_t pd[2],
                           const int64_t dl[2], bool ceil_mode, int64_t osz[2], int64_t sh[4]) {
  int lead = x->rank - 2;
  for (int i = 0; i < 2; i++) {
    int64_t in = x->shape[lead + i];
    int64_t num = in + 2 * pd[i] - dl[i] * (ks[i] - 1) - 1 + (ceil_mode ? st[i] - 1 : 0);
    if (num < 0) {
      kfail(k, "output size is too small");
      return false;
    }
    int64_t o = num / st[i] + 1;
    if (ceil_mode && (o - 1) * st[i] >= in + pd[i]) o--;
    osz[i] = o;
  }
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)lead);
  sh[lead] = osz[0];
  sh[lead + 1] = osz[1];
  return true;
}

/* max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False) */
static int k_max_pool2d(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x) return -1;
  if (x->rank != 3 && x->rank != 4) return kfail(k, "expected 3-D or 4-D input, got %d-D", x->rank);
  if (x->dtype == OX_DT_BOOL) return kfail(k, "not supported for bool tensors");
  int64_t ks[2], st[2], pd[2], dl[2];
  bool ceil_mode = false;
  if (!get_pair(k, s[1], "kernel_size", 1, ks)) return -1;
  if (is_none(s[2]) || (is_seq(s[2]) && s[2]->n == 0)) {
    st[0] = ks[0], st[1] = ks[1];
  } else if (!get_pair(k, s[2], "stride", 1, st)) {
    return -1;
  }
  if (!get_pair(k, s[3], "padding", 0, pd) || !get_pair(k, s[4], "dilation", 1, dl)) return -1;
  if (!is_none(s[5]) && !get_bool(k, s[5], "ceil_mode", &ceil_mode)) return -1;
  if (ks[0] <= 0 || ks[1] <= 0 || st[0] <= 0 || st[1] <= 0 || dl[0] <= 0 || dl[1] <= 0)
    return kfail(k, "kernel_size, stride and dilation must be positive");
  if (pd[0] < 0 || pd[1] < 0 || pd[0] > ks[0] / 2 || pd[1] > ks[1] / 2)
    return kfail(k, "pad should be at most half of the effective kernel size");
  int lead = x->rank - 2;
  int64_t H = x->shape[lead], W = x->shape[lead + 1];
  int64_t planes = ox_shape_numel(lead, x->shape);
  int64_t osz[2], sh[4];
  if (!pool_out_shape(k, x, ks, st, pd, dl, ceil_mode, osz, sh)) return -1;
  OxTensor *o = knew(k, x->dtype, x->rank, sh);
  if (!o) return -1;
  /* aten.max_pool2d_with_indices also returns the flat h * W + w index of each max */
  OxTensor *ind = k->outputs == 2 ? knew(k, OX_DT_I64, x->rank, sh) : NULL;
  if (k->outputs == 2 && !ind) {
    ox_tensor_free(o);
    return -1;
  }
  bool ip = is_int_store(x->dtype);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < osz[0]; oh++)
      for (int64_t ow = 0; ow < osz[1]; ow++) {
        double best = -INFINITY;
        int64_t ibest = INT64_MIN, where = -1;
        for (int64_t kh = 0; kh < ks[0]; kh++) {
          int64_t ih = oh * st[0] - pd[0] + kh * dl[0];
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < ks[1]; kw++) {
            int64_t iw = ow * st[1] - pd[1] + kw * dl[1];
            if (iw < 0 || iw >= W) continue;
            int64_t idx = (p * H + ih) * W + iw;
            if (ip) {
              int64_t v = ox_tensor_get_i64(x, idx);
              if (v > ibest || where < 0) ibest = v, where = ih * W + iw;
            } else {
              double v = ox_tensor_get(x, idx);
              if (v > best || isnan(v) || where < 0) best = v, where = ih * W + iw;
              if (isnan(best)) break;
            }
          }
        }
        int64_t oi = (p * osz[0] + oh) * osz[1] + ow;
        if (ip)
          ox_tensor_set_i64(o, oi, ibest);
        else
          ox_tensor_set(o, oi, best);
        if (ind) ox_tensor_set_i64(ind, oi, where);
      }
  if (!ind) return ret_tensor(o, out);
  V *res = ox_rt_seq(OX_RT_TUPLE, 2);
  res->u.items[0] = ox_rt_tensor(o);
  res->u.items[1] = ox_rt_tensor(ind);
  *out = res;
  return 0;
}

/* interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None,
 * recompute_scale_factor=None) over the last 1 ('nearest') or 2 dims, as ATen computes it: an
 * output index maps to the source coordinate dst * in / out ('nearest': floored), or for
 * 'bilinear' (dst + 0.5) * in / out - 0.5 clamped at 0 (align_corners=True: dst * (in - 1) /
 * (out - 1)), blended between its two neighbours; a scale_factor given without
 * recompute_scale_factor uses 1 / scale_factor as that ratio, as torch does. */
static int k_interpolate(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x) return -1;
  if (s[3]->kind != OX_RT_STR) return kfail(k, "mode: expected a string");
  bool bilinear = !strcmp(s[3]->s, "bilinear"), nearest = !strcmp(s[3]->s, "nearest");
  if (!bilinear && !nearest) return kfail(k, "mode '%s' is not supported (nearest, bilinear)", s[3]->s);
  int sp = x->rank - 2; /* spatial dims */
  if (sp < 1 || sp > 2 || (bilinear && sp != 2))
    return kfail(k, "%s needs a %s input, got %d-D", s[3]->s, bilinear ? "4-D" : "3-D or 4-D", x->rank);
  if (!need_float(k, x, "input")) return -1;
  bool align = false, recompute = false;
  if (!is_none(s[4]) && !get_bool(k, s[4], "align_corners", &align)) return -1;
  if (nearest && !is_none(s[4])) return kfail(k, "align_corners only goes with the bilinear mode");
  if (!is_none(s[5]) && !get_bool(k, s[5], "recompute_scale_factor", &recompute)) return -1;
  int64_t osz[2];
  double sf[2] = {0, 0}; /* the scale factors torch passes to its kernel (0: none) */
  if (!is_none(s[1])) {
    if (!is_none(s[2])) return kfail(k, "only one of size or scale_factor should be defined");
    int64_t v[MAXR];
    int nv = get_ints(k, s[1], "size", v, MAXR);
    if (nv < 0) return -1;
    if (nv != 1 && nv != sp) return kfail(k, "size has %d entries for %d spatial dims", nv, sp);
    for (int i = 0; i < sp; i++) osz[i] = v[nv == 1 ? 0 : i];
  } else if (!is_none(s[2])) {
    double f[2];
    if (is_seq(s[2])) {
      if ((int)s[2]->n != sp) return kfail(k, "scale_factor has %u entries for %d spatial dims", s[2]->n, sp);
      for (int i = 0; i < sp; i++)
        if (!get_num(k, s[2]->u.items[i], "scale_factor", &f[i])) return -1;
    } else {
      if (!get_num(k, s[2], "scale_factor", &f[0])) return -1;
      f[1] = f[0];
    }
    for (int i = 0; i < sp; i++) {
      if (!(f[i] > 0.0)) return kfail(k, "scale_factor must be positive");
      osz[i] = (int64_t)floor((double)x->shape[2 + i] * f[i]);
      if (!recompute) sf[i] = f[i];
    }
  } else {
    return kfail(k, "either size or scale_factor should be defined");
  }
  for (int i = 0; i < sp; i++)
    if (osz[i] <= 0 || x->shape[2 + i] <= 0) return kfail(k, "input and output sizes should be greater than 0");
  int64_t sh[4] = {x->shape[0], x->shape[1], osz[0], sp == 2 ? osz[1] : 0};
  OxTensor *o = knew(k, x->dtype, x->rank, sh);
  if (!o) return -1;
  int64_t planes = x->shape[0] * x->shape[1], H = x->shape[2], W = sp == 2 ? x->shape[3] : 1;
  int64_t OH = osz[0], OW = sp == 2 ? osz[1] : 1, in_sz[2] = {H, W}, out_sz[2] = {OH, OW};
  /* per spatial dim: the ratio in / out that maps an output index to a source coordinate */
  double ratio[2];
  for (int i = 0; i < 2; i++) {
    if (bilinear && align) ratio[i] = out_sz[i] > 1 ? (double)(in_sz[i] - 1) / (double)(out_sz[i] - 1) : 0.0;
    else ratio[i] = i < sp && sf[i] > 0.0 ? 1.0 / sf[i] : (double)in_sz[i] / (double)out_sz[i];
  }
  /* ATen computes the ratio and the coordinates in float for float tensors (opmath: float) */
  bool f32 = x->dtype != OX_DT_F64;
  for (int i = 0; i < 2; i++)
    if (f32) ratio[i] = (float)ratio[i];
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double v;
        if (nearest) {
          double fh = f32 ? (float)((float)oh * (float)ratio[0]) : oh * ratio[0];
          double fw = f32 ? (float)((float)ow * (float)ratio[1]) : ow * ratio[1];
          int64_t ih = (int64_t)floor(fh), iw = (int64_t)floor(fw);
          ih = ih < H - 1 ? ih : H - 1, iw = iw < W - 1 ? iw : W - 1;
          v = ox_tensor_get(x, (p * H + ih) * W + iw);
        } else {
          double src[2];
          int64_t d[2] = {oh, ow};
          for (int i = 0; i < 2; i++) {
            double r = align ? d[i] * ratio[i] : (d[i] + 0.5) * ratio[i] - 0.5;
            if (f32) r = align ? (float)((float)d[i] * (float)ratio[i]) : (float)((float)((float)d[i] + 0.5f) * (float)ratio[i] - 0.5f);
            src[i] = !align && r < 0.0 ? 0.0 : r;
          }
          int64_t h0 = (int64_t)src[0], w0 = (int64_t)src[1];
          int64_t h1 = h0 + (h0 < H - 1), w1 = w0 + (w0 < W - 1);
          double lh = src[0] - (double)h0, lw = src[1] - (double)w0;
          if (f32) lh = (float)lh, lw = (float)lw;
          double a = ox_tensor_get(x, (p * H + h0) * W + w0), b = ox_tensor_get(x, (p * H + h0) * W + w1);
          double c = ox_tensor_get(x, (p * H + h1) * W + w0), e = ox_tensor_get(x, (p * H + h1) * W + w1);
          v = (1.0 - lh) * ((1.0 - lw) * a + lw * b) + lh * ((1.0 - lw) * c + lw * e);
        }
        ox_tensor_set(o, (p * OH + oh) * OW + ow, v);
      }
  return ret_tensor(o, out);
}

/* avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
 *            divisor_override=None): each window's sum over the input it covers, divided by
 * divisor_override, else by the window's size clipped to the padded input (count_include_pad) or
 * by the number of input elements it covers, as ATen does. */
static int k_avg_pool2d(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x) return -1;
  if (x->rank != 3 && x->rank != 4) return kfail(k, "expected 3-D or 4-D input, got %d-D", x->rank);
  if (!need_float(k, x, "input")) return -1;
  int64_t ks[2], st[2], pd[2], divisor = 0;
  bool ceil_mode = false, include_pad = true;
  if (!get_pair(k, s[1], "kernel_size", 1, ks)) return -1;
  if (is_none(s[2]) || (is_seq(s[2]) && s[2]->n == 0)) {
    st[0] = ks[0], st[1] = ks[1];
  } else if (!get_pair(k, s[2], "stride", 1, st)) {
    return -1;
  }
  if (!get_pair(k, s[3], "padding", 0, pd)) return -1;
  if (!is_none(s[4]) && !get_bool(k, s[4], "ceil_mode", &ceil_mode)) return -1;
  if (!is_none(s[5]) && !get_bool(k, s[5], "count_include_pad", &include_pad)) return -1;
  if (!is_none(s[6])) {
    if (!get_int(k, s[6], "divisor_override", &divisor)) return -1;
    if (divisor == 0) return kfail(k, "divisor must be not zero");
  }
  if (ks[0] <= 0 || ks[1] <= 0 || st[0] <= 0 || st[1] <= 0) return kfail(k, "kernel_size and stride must be positive");
  if (pd[0] < 0 || pd[1] < 0 || pd[0] > ks[0] / 2 || pd[1] > ks[1] / 2)
    return kfail(k, "pad should be at most half of kernel size");
  int lead = x->rank - 2;
  int64_t H = x->shape[lead], W = x->shape[lead + 1], planes = ox_shape_numel(lead, x->shape), osz[2], sh[4];
  if (!pool_out_shape(k, x, ks, st, pd, (const int64_t[]){1, 1}, ceil_mode, osz, sh)) return -1;
  OxTensor *o = knew(k, x->dtype, x->rank, sh);
  if (!o) return -1;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < osz[0]; oh++)
      for (int64_t ow = 0; ow < osz[1]; ow++) {
        int64_t h0 = oh * st[0] - pd[0], w0 = ow * st[1] - pd[1];
        int64_t h1 = h0 + ks[0] < H + pd[0] ? h0 + ks[0] : H + pd[0];
        int64_t w1 = w0 + ks[1] < W + pd[1] ? w0 + ks[1] : W + pd[1];
        int64_t padded = (h1 - h0) * (w1 - w0);
        h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
        h1 = h1 > H ? H : h1, w1 = w1 > W ? W : w1;
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) sum += opmath(x->dtype, ox_tensor_get(x, (p * H + ih) * W + iw));
        int64_t div = divisor ? divisor : include_pad ? padded : (h1 - h0) * (w1 - w0);
        ox_tensor_set(o, (p * osz[0] + oh) * osz[1] + ow, div ? sum / (double)div : NAN);
      }
  return ret_tensor(o, out);
}

/* Attention's softmax over one row of scores, in place: exp(p - max) / sum (NaN-propagating max,
 * as k_softmax). */
static void softmax_row(double *p, int64_t n) {
  double mx = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j < n; j++)
    if (p[j] > mx || isnan(p[j])) mx = p[j];
  for (int64_t j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
  for (int64_t j = 0; j < n; j++) p[j] /= sum;
}

/* The attention masks as one additive mask [N * heads, L, S] (NULL with *ok when there is none):
 * key_padding_mask [N, S] ([S] unbatched) and attn_mask [L, S] or [N * heads, L, S] ([heads, L,
 * S] unbatched), each bool (uint8 too: True = not attended, -inf) or floating (added), summed as
 * torch merges them (a bool padding mask over a float attn_mask sets -inf; two bool masks are
 * or-ed). A row masked everywhere gives NaN, as torch's softmax does. */
static double *attn_mask_build(K *k, const V *kpm_v, const V *am_v, const char *kpm_name, const char *am_name, int64_t N,
                               int64_t heads, int64_t L, int64_t S, bool batched, bool *ok) {
  *ok = true;
  const OxTensor *kp = NULL, *am = NULL;
  if (!is_none(kpm_v) && !(kp = get_tensor(k, kpm_v, kpm_name))) return (*ok = false), NULL;
  if (!is_none(am_v) && !(am = get_tensor(k, am_v, am_name))) return (*ok = false), NULL;
  if (!kp && !am) return NULL;
  char b[128];
  if (kp && !(batched ? kp->rank == 2 && kp->shape[0] == N && kp->shape[1] == S : kp->rank == 1 && kp->shape[0] == S)) {
    shape_str(kp->rank, kp->shape, b, sizeof b);
    if (batched)
      kfail(k, "%s is %s, expected [%lld, %lld]", kpm_name, b, (long long)N, (long long)S);
    else
      kfail(k, "%s is %s, expected [%lld]", kpm_name, b, (long long)S);
    return (*ok = false), NULL;
  }
  bool am3 = am && am->rank == 3;
  if (am && !((am->rank == 2 && am->shape[0] == L && am->shape[1] == S) ||
              (am3 && am->shape[0] == N * heads && am->shape[1] == L && am->shape[2] == S))) {
    shape_str(am->rank, am->shape, b, sizeof b);
    kfail(k, "%s is %s, expected [%lld, %lld] or [%lld, %lld, %lld]", am_name, b, (long long)L, (long long)S,
          (long long)(N * heads), (long long)L, (long long)S);
    return (*ok = false), NULL;
  }
  int64_t n_all = N * heads * L * S;
  double *M = malloc(nz(n_all) * sizeof *M);
  if (!M) return kfail(k, "out of memory"), (*ok = false), NULL;
  bool kp_bool = kp && !is_float_dt(kp->dtype), am_bool = am && !is_float_dt(am->dtype);
  for (int64_t n = 0; n < N; n++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t l = 0; l < L; l++)
        for (int64_t j = 0; j < S; j++) {
          double v = 0.0;
          if (am) {
            double a = ox_tensor_get(am, am3 ? ((n * heads + h) * L + l) * S + j : l * S + j);
            v += am_bool ? (a != 0.0 ? -INFINITY : 0.0) : a;
          }
          if (kp) {
            double a = ox_tensor_get(kp, n * S + j);
            v += kp_bool ? (a != 0.0 ? -INFINITY : 0.0) : a;
          }
          M[((n * heads + h) * L + l) * S + j] = v;
        }
  return M;
}

/* Attention's in-projections: q [E, E], k [E, ek], v [E, ev] (the packed [3E, E] in_proj_weight's
 * thirds when ek = ev = E). */
typedef struct AttnProj {
  const double *q, *k, *v;
  int64_t ek, ev;
} AttnProj;

/* Attention on rows of doubles (a row is one token; row r of a [L, N, E] sequence is l * N + n,
 * n * L + l when bf): X the queries' tokens, KX and VX the keys' and values' [S, N, ek] and
 * [S, N, ev] alike; W the in-projections, BI their bias [3E] or NULL, WO / BO the out-projection. Writes
 * C [L * N, E] (out-projected, its bias added) and, given wts, the weights (averaged over the
 * heads or per head, as k_multi_head_attention returns them). M, when given, is added to the
 * scores: [N * heads, L, S] (attn_mask_build). Operands are rounded to dt's opmath by the caller. */
static int attention_rows(K *k, OxDType dt, const double *X, const double *KX, const double *VX, int64_t L, int64_t S,
                          int64_t N, int64_t E, int64_t heads, bool bf, const AttnProj *W, const double *BI,
                          const double *WO, const double *BO, const double *M, double *C, OxTensor *wts, bool avg_w) {
  int64_t hd = E / heads, Ek = W->ek, Ev = W->ev;
  double *Q = malloc(nz(L * N * E) * sizeof *Q), *KP = malloc(nz(S * N * E) * sizeof *KP);
  double *VP = malloc(nz(S * N * E) * sizeof *VP), *A = malloc(nz(L * N * E) * sizeof *A), *P = malloc(nz(S) * sizeof *P);
  double *WQ = malloc(nz(E * E) * sizeof *WQ), *WK = malloc(nz(E * Ek) * sizeof *WK), *WV = malloc(nz(E * Ev) * sizeof *WV);
  double *WOr = malloc(nz(E * E) * sizeof *WOr);
  if (!Q || !KP || !VP || !A || !P || !WQ || !WK || !WV || !WOr) {
    free(Q), free(KP), free(VP), free(A), free(P), free(WQ), free(WK), free(WV), free(WOr);
    return kfail(k, "out of memory");
  }
  for (int64_t i = 0; i < E * E; i++) WQ[i] = opmath(dt, W->q[i]);
  for (int64_t i = 0; i < E * Ek; i++) WK[i] = opmath(dt, W->k[i]);
  for (int64_t i = 0; i < E * Ev; i++) WV[i] = opmath(dt, W->v[i]);
  for (int64_t i = 0; i < E * E; i++) WOr[i] = opmath(dt, WO[i]);
  /* the projections, row by row in each tensor's own layout (a row is one token) */
  gemm(X, WQ, Q, L * N, E, E, true);
  gemm(KX, WK, KP, S * N, Ek, E, true);
  gemm(VX, WV, VP, S * N, Ev, E, true);
  if (BI) {
    for (int64_t r = 0; r < L * N; r++)
      for (int64_t j = 0; j < E; j++) Q[r * E + j] += opmath(dt, BI[j]);
    for (int64_t r = 0; r < S * N; r++)
      for (int64_t j = 0; j < E; j++) {
        KP[r * E + j] += opmath(dt, BI[E + j]);
        VP[r * E + j] += opmath(dt, BI[2 * E + j]);
      }
  }
  double scale = 1.0 / sqrt((double)hd);
  for (int64_t n = 0; n < N; n++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t l = 0; l < L; l++) {
        int64_t rq = bf ? n * L + l : l * N + n;
        const double *qr = Q + rq * E + h * hd;
        for (int64_t j = 0; j < S; j++) {
          const double *kr = KP + (bf ? n * S + j : j * N + n) * E + h * hd;
          double acc = 0.0;
          for (int64_t d = 0; d < hd; d++) acc += qr[d] * scale * kr[d];
          P[j] = M ? acc + M[((n * heads + h) * L + l) * S + j] : acc;
        }
        softmax_row(P, S);
        double *ar = A + rq * E + h * hd;
        for (int64_t d = 0; d < hd; d++) ar[d] = 0.0;
        for (int64_t j = 0; j < S; j++) {
          const double *vr = VP + (bf ? n * S + j : j * N + n) * E + h * hd;
          for (int64_t d = 0; d < hd; d++) ar[d] += P[j] * vr[d];
          if (!wts) continue;
          int64_t wi_ = avg_w ? (n * L + l) * S + j : ((n * heads + h) * L + l) * S + j;
          ox_tensor_set(wts, wi_, (avg_w ? ox_tensor_get(wts, wi_) : 0.0) + (avg_w ? P[j] / (double)heads : P[j]));
        }
      }
  gemm(A, WOr, C, L * N, E, E, true);
  for (int64_t r = 0; r < L * N; r++)
    for (int64_t j = 0; j < E; j++) C[r * E + j] = C[r * E + j] + (BO ? opmath(dt, BO[j]) : 0.0);
  free(Q), free(KP), free(VP), free(A), free(P), free(WQ), free(WK), free(WV), free(WOr);
  return 0;
}

/* multi_head_attention(query, key, value, num_heads, in_proj_weight, in_proj_bias,
 *                      out_proj_weight, out_proj_bias, need_weights, average_attn_weights,
 *                      batch_first, key_padding_mask, attn_mask): nn.MultiheadAttention.forward in
 * eval mode, with one packed in-projection [3E, E] and the masks of attn_mask_build. query [L, N, E] ([N, L, E] batch_first, [L, E] unbatched),
 * key and value [S, N, E] alike. Per batch n and head h: softmax(q k^T / sqrt(E / heads)) v, the
 * heads side by side through out_proj. Returns (out shaped as query, weights [N, L, S] averaged
 * over the heads, [N, heads, L, S] when not averaged, or None when need_weights=False). */
static int k_multi_head_attention(K *k, V *const *s, V **out) {
  const OxTensor *q = get_tensor(k, s[0], "query"), *kt = q ? get_tensor(k, s[1], "key") : NULL;
  const OxTensor *vt = kt ? get_tensor(k, s[2], "value") : NULL;
  if (!vt) return -1;
  /* one packed in_proj_weight, or (kdim / vdim unlike embed_dim) q_proj_weight, k_proj_weight,
   * v_proj_weight */
  bool sep = is_none(s[4]) && !is_none(s[13]);
  const OxTensor *wi = NULL, *wq = NULL, *wk = NULL, *wv = NULL;
  if (sep) {
    if (!(wq = get_tensor(k, s[13], "q_proj_weight")) || !(wk = get_tensor(k, s[14], "k_proj_weight")) ||
        !(wv = get_tensor(k, s[15], "v_proj_weight")))
      return -1;
  } else if (is_none(s[4])) {
    return kfail(k, "no value for parameter in_proj_weight, nor q_proj_weight, k_proj_weight, v_proj_weight (record "
                    "the model's parameters: export --record)");
  } else if (!(wi = get_tensor(k, s[4], "in_proj_weight"))) {
    return -1;
  }
  const OxTensor *wo = get_tensor(k, s[6], "out_proj_weight");
  if (!wo) return -1;
  const OxTensor *bi = NULL, *bo = NULL;
  if (!is_none(s[5]) && !(bi = get_tensor(k, s[5], "in_proj_bias"))) return -1;
  if (!is_none(s[7]) && !(bo = get_tensor(k, s[7], "out_proj_bias"))) return -1;
  int64_t heads;
  bool need_w = true, avg_w = true, bf = false;
  if (!get_int(k, s[3], "num_heads", &heads)) return -1;
  if (!is_none(s[8]) && !get_bool(k, s[8], "need_weights", &need_w)) return -1;
  if (!is_none(s[9]) && !get_bool(k, s[9], "average_attn_weights", &avg_w)) return -1;
  if (!is_none(s[10]) && !get_bool(k, s[10], "batch_first", &bf)) return -1;
  if (!need_float(k, q, "query") || !same_dtype(k, q, kt) || !same_dtype(k, q, vt) || (wi && !same_dtype(k, q, wi)) ||
      (sep && (!same_dtype(k, q, wq) || !same_dtype(k, q, wk) || !same_dtype(k, q, wv))) || !same_dtype(k, q, wo) ||
      (bi && !same_dtype(k, q, bi)) || (bo && !same_dtype(k, q, bo)))
    return -1;
  char sq[128], sk[128];
  shape_str(q->rank, q->shape, sq, sizeof sq);
  shape_str(kt->rank, kt->shape, sk, sizeof sk);
  if (q->rank != 2 && q->rank != 3) return kfail(k, "query %s: expected 2-D (unbatched) or 3-D", sq);
  if (kt->rank != q->rank || vt->rank != q->rank) return kfail(k, "query %s, key %s: ranks differ", sq, sk);
  bool batched = q->rank == 3;
  int64_t E = q->shape[q->rank - 1];
  int64_t N = batched ? q->shape[bf ? 0 : 1] : 1, L = batched ? q->shape[bf ? 1 : 0] : q->shape[0];
  int64_t S = batched ? kt->shape[bf ? 1 : 0] : kt->shape[0];
  int64_t Ek = kt->shape[kt->rank - 1], Ev = vt->shape[vt->rank - 1];
  if ((batched && kt->shape[bf ? 0 : 1] != N) || (!sep && Ek != E))
    return kfail(k, "query %s and key %s: batch or embedding sizes differ", sq, sk);
  for (int i = 0; i < vt->rank - 1; i++)
    if (vt->shape[i] != kt->shape[i]) return kfail(k, "key %s and value: shapes differ", sk);
  if (!sep && Ev != E) return kfail(k, "key %s and value: shapes differ", sk);
  if (heads <= 0 || E % heads) return kfail(k, "embed_dim %lld is not divisible by num_heads %lld", (long long)E, (long long)heads);
  if (wi && (wi->rank != 2 || wi->shape[0] != 3 * E || wi->shape[1] != E))
    return kfail(k, "in_proj_weight must be [%lld, %lld] (kdim and vdim equal to embed_dim)", (long long)(3 * E), (long long)E);
  const OxTensor *pw[3] = {wq, wk, wv};
  const int64_t pin[3] = {E, Ek, Ev};
  for (int i = 0; sep && i < 3; i++)
    if (pw[i]->rank != 2 || pw[i]->shape[0] != E || pw[i]->shape[1] != pin[i])
      return kfail(k, "%s_proj_weight must be [%lld, %lld]", i == 0 ? "q" : i == 1 ? "k" : "v", (long long)E, (long long)pin[i]);
  if (wo->rank != 2 || wo->shape[0] != E || wo->shape[1] != E) return kfail(k, "out_proj_weight must be [%lld, %lld]", (long long)E, (long long)E);
  if ((bi && bi->numel != 3 * E) || (bo && bo->numel != E)) return kfail(k, "in_proj_bias must have %lld and out_proj_bias %lld elements", (long long)(3 * E), (long long)E);
  int64_t lim = k->max_elems > 0 ? k->max_elems : OX_KERNEL_DEFAULT_MAX_ELEMS;
  if (L * S > lim / (heads * N > 0 ? heads * N : 1))
    return kfail(k, "attention of %lld x %lld per head exceeds the budget of %lld elements", (long long)L, (long long)S, (long long)lim);
  int64_t wsh[4];
  int wrank = 0;
  if (batched) wsh[wrank++] = N;
  if (!avg_w) wsh[wrank++] = heads;
  wsh[wrank++] = L;
  wsh[wrank++] = S;
  bool mask_ok;
  double *M = attn_mask_build(k, s[11], s[12], "key_padding_mask", "attn_mask", N, heads, L, S, batched, &mask_ok);
  if (!mask_ok) return -1;
  OxTensor *o = knew(k, q->dtype, q->rank, q->shape), *wts = need_w ? knew(k, q->dtype, wrank, wsh) : NULL;
  double *X = to_doubles(k, q), *KX = to_doubles(k, kt), *VX = to_doubles(k, vt);
  double *WI = wi ? to_doubles(k, wi) : NULL, *WQ = sep ? to_doubles(k, wq) : NULL, *WK = sep ? to_doubles(k, wk) : NULL;
  double *WV = sep ? to_doubles(k, wv) : NULL;
  double *WO = to_doubles(k, wo), *BI = bi ? to_doubles(k, bi) : NULL, *BO = bo ? to_doubles(k, bo) : NULL;
  double *C = malloc(nz(L * N * E) * sizeof *C);
  int rc = 0;
  if (!o || (need_w && !wts) || !X || !KX || !VX || (wi && !WI) || (sep && (!WQ || !WK || !WV)) || !WO || (bi && !BI) ||
      (bo && !BO) || !C) {
    rc = o && (!need_w || wts) ? kfail(k, "out of memory") : -1;
    goto done;
  }
  for (int64_t i = 0; i < q->numel; i++) X[i] = opmath(q->dtype, X[i]);
  for (int64_t i = 0; i < kt->numel; i++) KX[i] = opmath(q->dtype, KX[i]);
  for (int64_t i = 0; i < vt->numel; i++) VX[i] = opmath(q->dtype, VX[i]);
  AttnProj W = sep ? (AttnProj){WQ, WK, WV, Ek, Ev} : (AttnProj){WI, WI + E * E, WI + 2 * E * E, E, E};
  rc = attention_rows(k, q->dtype, X, KX, VX, L, S, N, E, heads, bf, &W, BI, WO, BO, M, C, wts, avg_w);
  for (int64_t i = 0; rc == 0 && i < L * N * E; i++) ox_tensor_set(o, i, C[i]);
done:
  free(X), free(KX), free(VX), free(WI), free(WQ), free(WK), free(WV), free(WO), free(BI), free(BO), free(C), free(M);
  if (rc != 0) {
    if (o) ox_tensor_free(o);
    if (wts) ox_tensor_free(wts);
    return -1;
  }
  V *res = ox_rt_seq(OX_RT_TUPLE, 2);
  res->u.items[0] = ox_rt_tensor(o);
  res->u.items[1] = wts ? ox_rt_tensor(wts) : ox_rt_none();
  *out = res;
  return 0;
}

/* ------------------------------------------------------------------ sequence modules
 *
 * nn.TransformerEncoder(Layer) and nn.GRU / nn.LSTM / nn.RNN, computed from the module's
 * parameters (the `params` slot: (relative name, tensor) pairs). Each step rounds its result to
 * the input's opmath precision, as torch's separate ops do (linear, attention, norm, residual
 * add; a recurrent cell's new state). */

/* The parameter `prefix``name` of a sequence module's params list, or NULL (with an error when
 * required). */
static const OxTensor *seq_param(K *k, const V *params, const char *prefix, const char *name, bool required) {
  size_t pl = strlen(prefix);
  for (uint32_t i = 0; params && i < params->n; i++) {
    const V *p = params->u.items[i];
    if (!p || p->kind != OX_RT_TUPLE || p->n != 2 || !p->u.items[0] || p->u.items[0]->kind != OX_RT_STR) continue;
    const char *nm = p->u.items[0]->s;
    if (strncmp(nm, prefix, pl) || strcmp(nm + pl, name)) continue;
    if (p->u.items[1]->kind != OX_RT_TENSOR) {
      kfail(k, "parameter %s%s is not a tensor", prefix, name);
      return NULL;
    }
    return p->u.items[1]->u.t;
  }
  if (required) kfail(k, "no value for parameter %s%s (record the model's parameters: export --record)", prefix, name);
  return NULL;
}

/* A parameter as doubles, checked to be a floating tensor of dtype dt with numel elements (and
 * rows x cols when rows > 0); NULL with an error otherwise or when missing and required. *ok is
 * false on an error (a missing optional one leaves it true). */
static double *seq_doubles(K *k, const V *params, const char *prefix, const char *name, OxDType dt, int64_t rows,
                           int64_t cols, bool required, bool *ok) {
  const OxTensor *t = seq_param(k, params, prefix, name, required);
  if (!t) {
    if (required) *ok = false;
    return NULL;
  }
  int64_t want = rows > 0 ? rows * cols : cols;
  if (t->dtype != dt || (rows > 0 ? (t->rank != 2 || t->shape[0] != rows || t->shape[1] != cols) : t->numel != cols)) {
    char b[128];
    shape_str(t->rank, t->shape, b, sizeof b);
    if (rows > 0)
      kfail(k, "parameter %s%s is %s %s, expected %s [%lld, %lld]", prefix, name, ox_dtype_abbr(t->dtype), b,
            ox_dtype_abbr(dt), (long long)rows, (long long)cols);
    else
      kfail(k, "parameter %s%s is %s %s, expected %s with %lld elements", prefix, name, ox_dtype_abbr(t->dtype), b,
            ox_dtype_abbr(dt), (long long)want);
    *ok = false;
    return NULL;
  }
  double *d = to_doubles(k, t);
  if (!d) {
    *ok = false;
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++) d[i] = opmath(dt, d[i]);
  return d;
}

static void round_rows(OxDType dt, double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = opmath(dt, x[i]);
}

/* y[r, :] = x[r, :] @ w[out, in].T + b, rounded */
static void linear_rows(OxDType dt, const double *x, const double *w, const double *b, double *y, int64_t rows,
                        int64_t in, int64_t outf) {
  gemm(x, w, y, rows, in, outf, true);
  for (int64_t r = 0; b && r < rows; r++)
    for (int64_t j = 0; j < outf; j++) y[r * outf + j] += b[j];
  round_rows(dt, y, rows * outf);
}

/* layer norm of each row of x (E wide) into y, with optional gamma / beta, rounded */
static void norm_rows(OxDType dt, const double *x, double *y, int64_t rows, int64_t E, const double *g, const double *b,
                      double eps) {
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * E;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < E; j++) mean += xr[j];
    mean /= (double)E;
    for (int64_t j = 0; j < E; j++) var += (xr[j] - mean) * (xr[j] - mean);
    var /= (double)E;
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < E; j++) {
      double v = (xr[j] - mean) * rstd;
      if (g) v *= g[j];
      if (b) v += b[j];
      y[r * E + j] = opmath(dt, v);
    }
  }
}

typedef struct EncCfg {
  int64_t heads;
  int act; /* U_RELU or U_GELU */
  double eps;
  bool bf, norm_first;
} EncCfg;

/* The settings an encoder layer takes (slots nhead, activation, layer_norm_eps, batch_first,
 * norm_first at s[i0 ...]). */
static bool enc_cfg(K *k, V *const *s, int i0, EncCfg *c) {
  c->act = U_RELU, c->eps = 1e-5, c->bf = false, c->norm_first = false;
  if (!get_int(k, s[i0], "nhead", &c->heads)) return false;
  if (!is_none(s[i0 + 1])) {
    const V *a = s[i0 + 1];
    const char *nm = a->kind == OX_RT_STR || a->kind == OX_RT_OPAQUE ? a->s : NULL;
    if (nm && (!strcmp(nm, "relu") || !strcmp(nm, "torch.nn.functional.relu") || !strcmp(nm, "torch.nn.ReLU")))
      c->act = U_RELU;
    else if (nm && (!strcmp(nm, "gelu") || !strcmp(nm, "torch.nn.functional.gelu") || !strcmp(nm, "torch.nn.GELU")))
      c->act = U_GELU;
    else {
      kfail(k, "activation %s is not supported (relu or gelu)", nm ? nm : ox_rt_kind_name(a->kind));
      return false;
    }
  }
  if (!is_none(s[i0 + 2]) && !get_num(k, s[i0 + 2], "layer_norm_eps", &c->eps)) return false;
  if (!is_none(s[i0 + 3]) && !get_bool(k, s[i0 + 3], "batch_first", &c->bf)) return false;
  if (!is_none(s[i0 + 4]) && !get_bool(k, s[i0 + 4], "norm_first", &c->norm_first)) return false;
  return true;
}

/* One nn.TransformerEncoderLayer (eval, no masks) over x [T = L * N rows, E], in place:
 * post-norm x = norm1(x + sa(x)); x = norm2(x + ff(x)); pre-norm x = x + sa(norm1(x));
 * x = x + ff(norm2(x)); sa is self-attention (need_weights=False), ff linear2(act(linear1)). */
static int encoder_layer_rows(K *k, const V *params, const char *pre, OxDType dt, double *x, int64_t L, int64_t N,
                              int64_t E, const EncCfg *c, const double *M) {
  const OxTensor *w1t = seq_param(k, params, pre, "linear1.weight", true);
  if (!w1t) return -1;
  int64_t F = w1t->rank == 2 ? w1t->shape[0] : -1, T = L * N;
  if (F <= 0) return kfail(k, "parameter %slinear1.weight must be 2-D [dim_feedforward, %lld]", pre, (long long)E);
  bool ok = true;
  char sa[256];
  snprintf(sa, sizeof sa, "%sself_attn.", pre);
  double *WI = seq_doubles(k, params, sa, "in_proj_weight", dt, 3 * E, E, true, &ok);
  double *BI = ok ? seq_doubles(k, params, sa, "in_proj_bias", dt, 0, 3 * E, false, &ok) : NULL;
  double *WO = ok ? seq_doubles(k, params, sa, "out_proj.weight", dt, E, E, true, &ok) : NULL;
  double *BO = ok ? seq_doubles(k, params, sa, "out_proj.bias", dt, 0, E, false, &ok) : NULL;
  double *W1 = ok ? seq_doubles(k, params, pre, "linear1.weight", dt, F, E, true, &ok) : NULL;
  double *B1 = ok ? seq_doubles(k, params, pre, "linear1.bias", dt, 0, F, false, &ok) : NULL;
  double *W2 = ok ? seq_doubles(k, params, pre, "linear2.weight", dt, E, F, true, &ok) : NULL;
  double *B2 = ok ? seq_doubles(k, params, pre, "linear2.bias", dt, 0, E, false, &ok) : NULL;
  double *G1 = ok ? seq_doubles(k, params, pre, "norm1.weight", dt, 0, E, false, &ok) : NULL;
  double *N1 = ok ? seq_doubles(k, params, pre, "norm1.bias", dt, 0, E, false, &ok) : NULL;
  double *G2 = ok ? seq_doubles(k, params, pre, "norm2.weight", dt, 0, E, false, &ok) : NULL;
  double *N2 = ok ? seq_doubles(k, params, pre, "norm2.bias", dt, 0, E, false, &ok) : NULL;
  double *Y = malloc(nz(T * E) * sizeof *Y), *Z = malloc(nz(T * E) * sizeof *Z), *H = malloc(nz(T * F) * sizeof *H);
  int rc = 0;
  if (!ok) {
    rc = -1;
  } else if (!Y || !Z || !H) {
    rc = kfail(k, "out of memory");
  } else {
    for (int part = 0; part < 2 && rc == 0; part++) {
      const double *g = part ? G2 : G1, *b = part ? N2 : N1;
      const double *in = x;
      if (c->norm_first) { /* the block reads norm(x) */
        norm_rows(dt, x, Z, T, E, g, b, c->eps);
        in = Z;
      }
      if (part == 0) {
        AttnProj W = {WI, WI + E * E, WI + 2 * E * E, E, E};
        rc = attention_rows(k, dt, in, in, in, L, L, N, E, c->heads, c->bf, &W, BI, WO, BO, M, Y, NULL, false);
        round_rows(dt, Y, T * E);
      } else {
        linear_rows(dt, in, W1, B1, H, T, E, F);
        for (int64_t i = 0; i < T * F; i++) H[i] = opmath(dt, unary_d(&H[i], &c->act));
        linear_rows(dt, H, W2, B2, Y, T, F, E);
      }
      for (int64_t i = 0; i < T * E; i++) Y[i] = opmath(dt, x[i] + Y[i]); /* the residual */
      if (c->norm_first)
        memcpy(x, Y, (size_t)(T * E) * sizeof *x);
      else
        norm_rows(dt, Y, x, T, E, g, b, c->eps);
    }
  }
  free(WI), free(BI), free(WO), free(BO), free(W1), free(B1), free(W2), free(B2);
  free(G1), free(N1), free(G2), free(N2), free(Y), free(Z), free(H);
  return rc;
}

/* The source of an encoder: [L, N, E] ([N, L, E] batch_first) or [L, E] unbatched; as doubles. */
static double *enc_source(K *k, const OxTensor *x, const EncCfg *c, int64_t *L, int64_t *N, int64_t *E) {
  char b[128];
  shape_str(x->rank, x->shape, b, sizeof b);
  if (!need_float(k, x, "src")) return NULL;
  if (x->rank != 2 && x->rank != 3) {
    kfail(k, "src %s: expected 2-D (unbatched) or 3-D", b);
    return NULL;
  }
  *E = x->shape[x->rank - 1];
  *N = x->rank == 3 ? x->shape[c->bf ? 0 : 1] : 1;
  *L = x->rank == 3 ? x->shape[c->bf ? 1 : 0] : x->shape[0];
  if (c->heads <= 0 || *E % c->heads) {
    kfail(k, "d_model %lld is not divisible by nhead %lld", (long long)*E, (long long)c->heads);
    return NULL;
  }
  int64_t lim = k->max_elems > 0 ? k->max_elems : OX_KERNEL_DEFAULT_MAX_ELEMS;
  if (*L > 0 && *L > lim / *L) {
    kfail(k, "attention of %lld x %lld exceeds the budget of %lld elements", (long long)*L, (long long)*L, (long long)lim);
    return NULL;
  }
  double *d = to_doubles(k, x);
  if (d) round_rows(x->dtype, d, x->numel);
  return d;
}

static int enc_result(K *k, const OxTensor *x, double *d, V **out) {
  OxTensor *o = knew(k, x->dtype, x->rank, x->shape);
  if (o)
    for (int64_t i = 0; i < x->numel; i++) ox_tensor_set(o, i, d[i]);
  free(d);
  return ret_tensor(o, out);
}

/* transformer_encoder_layer(src, params, nhead, activation, layer_norm_eps, batch_first, norm_first) */
static int k_transformer_encoder_layer(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "src");
  EncCfg c;
  int64_t L, N, E;
  if (!x) return -1;
  if (!is_seq(s[1])) return kfail(k, "params: expected the module's parameters");
  if (!enc_cfg(k, s, 2, &c)) return -1;
  double *d = enc_source(k, x, &c, &L, &N, &E);
  if (!d) return -1;
  bool mask_ok;
  double *M = attn_mask_build(k, s[8], s[7], "src_key_padding_mask", "src_mask", N, c.heads, L, L, x->rank == 3, &mask_ok);
  if (!mask_ok || encoder_layer_rows(k, s[1], "", x->dtype, d, L, N, E, &c, M) != 0) {
    free(d), free(M);
    return -1;
  }
  free(M);
  return enc_result(k, x, d, out);
}

/* transformer_encoder(src, params, num_layers, nhead, activation, layer_norm_eps, batch_first,
 * norm_first, norm_eps): layers.0 ... layers.{num_layers-1}, then norm (when norm_eps is set) */
static int k_transformer_encoder(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "src");
  EncCfg c;
  int64_t L, N, E, layers;
  double neps = 0;
  bool final_norm = !is_none(s[8]);
  if (!x) return -1;
  if (!is_seq(s[1])) return kfail(k, "params: expected the module's parameters");
  if (!get_int(k, s[2], "num_layers", &layers) || !enc_cfg(k, s, 3, &c)) return -1;
  if (final_norm && !get_num(k, s[8], "norm_eps", &neps)) return -1;
  if (layers < 1 || layers > 1000) return kfail(k, "num_layers %lld is out of range", (long long)layers);
  char pre[64];
  snprintf(pre, sizeof pre, "layers.%lld.", (long long)layers);
  if (seq_param(k, s[1], pre, "linear1.weight", false))
    return kfail(k, "num_layers is %lld but the module has %slinear1.weight", (long long)layers, pre);
  if (!final_norm && seq_param(k, s[1], "", "norm.weight", false))
    return kfail(k, "the module has a final norm (norm.weight) but norm_eps is None");
  bool nested_ok = true;
  if (!is_none(s[11]) && !get_bool(k, s[11], "enable_nested_tensor", &nested_ok)) return -1;
  double *d = enc_source(k, x, &c, &L, &N, &E);
  if (!d) return -1;
  bool mask_ok;
  double *M = attn_mask_build(k, s[10], s[9], "src_key_padding_mask", "mask", N, c.heads, L, L, x->rank == 3, &mask_ok);
  if (!mask_ok) {
    free(d);
    return -1;
  }
  for (int64_t i = 0; i < layers; i++) {
    snprintf(pre, sizeof pre, "layers.%lld.", (long long)i);
    if (encoder_layer_rows(k, s[1], pre, x->dtype, d, L, N, E, &c, M) != 0) {
      free(d), free(M);
      return -1;
    }
  }
  free(M);
  /* torch 1.13 in inference (no_grad, as the bridge records) runs a post-norm batch-first encoder
   * given only a bool padding mask as a nested tensor: the same values, and 0 at padded positions
   * (to_padded_tensor(0.)), the final norm included */
  const OxTensor *kp = is_none(s[10]) ? NULL : s[10]->u.t;
  bool nested = nested_ok && kp && !is_float_dt(kp->dtype) && is_none(s[9]) && !c.norm_first && c.bf && x->rank == 3;
  if (final_norm) {
    bool ok = true;
    double *g = seq_doubles(k, s[1], "", "norm.weight", x->dtype, 0, E, false, &ok);
    double *b = ok ? seq_doubles(k, s[1], "", "norm.bias", x->dtype, 0, E, false, &ok) : NULL;
    if (ok) norm_rows(x->dtype, d, d, L * N, E, g, b, neps);
    free(g), free(b);
    if (!ok) {
      free(d);
      return -1;
    }
  }
  for (int64_t n = 0; nested && n < N; n++)
    for (int64_t l = 0; l < L; l++)
      if (ox_tensor_get(kp, n * L + l) != 0.0) memset(d + (n * L + l) * E, 0, (size_t)E * sizeof *d);
  return enc_result(k, x, d, out);
}

enum { RNN_GRU, RNN_LSTM, RNN_TANH_RELU };

/* gru / lstm / rnn(input, params, hidden_size, hx, num_layers, bias, batch_first, bidirectional
 * [, nonlinearity]): torch's cells (gates r, z, n for the GRU; i, f, g, o for the LSTM), layer
 * by layer, each direction over the whole sequence (the reverse one from its end); a layer's
 * input is the previous layer's output, both directions side by side. */
static int rnn_kernel(K *k, V *const *s, int mode, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x || !need_float(k, x, "input")) return -1;
  if (!is_seq(s[1])) return kfail(k, "params: expected the module's parameters");
  int64_t H, layers = 1;
  bool bias = true, bf = false, bidir = false, relu = false;
  if (!get_int(k, s[2], "hidden_size", &H)) return -1;
  if (!is_none(s[4]) && !get_int(k, s[4], "num_layers", &layers)) return -1;
  if (!is_none(s[5]) && !get_bool(k, s[5], "bias", &bias)) return -1;
  if (!is_none(s[6]) && !get_bool(k, s[6], "batch_first", &bf)) return -1;
  if (!is_none(s[7]) && !get_bool(k, s[7], "bidirectional", &bidir)) return -1;
  if (mode == RNN_TANH_RELU && !is_none(s[8])) {
    if (s[8]->kind != OX_RT_STR || (strcmp(s[8]->s, "tanh") && strcmp(s[8]->s, "relu")))
      return kfail(k, "nonlinearity must be 'tanh' or 'relu'");
    relu = !strcmp(s[8]->s, "relu");
  }
  if (H <= 0 || H > ((int64_t)1 << 32) || layers < 1 || layers > 1000)
    return kfail(k, "hidden_size %lld / num_layers %lld out of range", (long long)H, (long long)layers);
  char b[128], nm[64];
  shape_str(x->rank, x->shape, b, sizeof b);
  if (x->rank != 2 && x->rank != 3) return kfail(k, "input %s: expected 2-D (unbatched) or 3-D", b);
  bool batched = x->rank == 3;
  int64_t T = x->shape[batched && bf ? 1 : 0], N = batched ? x->shape[bf ? 0 : 1] : 1, In = x->shape[x->rank - 1];
  int D = bidir ? 2 : 1, G = mode == RNN_GRU ? 3 : mode == RNN_LSTM ? 4 : 1;
  /* the first weight fixes the sizes before anything is allocated from them */
  const OxTensor *w0 = seq_param(k, s[1], "", "weight_ih_l0", true);
  if (!w0) return -1;
  if (w0->rank != 2 || w0->shape[0] != G * H || w0->shape[1] != In) {
    shape_str(w0->rank, w0->shape, b, sizeof b);
    return kfail(k, "weight_ih_l0 is %s, expected [%lld, %lld] (hidden_size %lld, input size %lld)", b,
                 (long long)(G * H), (long long)In, (long long)H, (long long)In);
  }
  /* the module's parameters must agree with the settings (a dump with other settings than its
   * module is refused, not computed differently) */
  snprintf(nm, sizeof nm, "weight_ih_l%lld", (long long)layers);
  if (seq_param(k, s[1], "", nm, false)) return kfail(k, "num_layers is %lld but the module has %s", (long long)layers, nm);
  if (!bidir && seq_param(k, s[1], "", "weight_ih_l0_reverse", false))
    return kfail(k, "bidirectional is False but the module has weight_ih_l0_reverse");
  if (!bias && seq_param(k, s[1], "", "bias_ih_l0", false)) return kfail(k, "bias is False but the module has bias_ih_l0");
  if (seq_param(k, s[1], "", "weight_hr_l0", false)) return kfail(k, "proj_size > 0 is not supported");
  /* the initial state: hx [D * layers, N, H] ([D * layers, H] unbatched); the LSTM's (h0, c0) */
  const OxTensor *h0 = NULL, *c0 = NULL;
  if (!is_none(s[3])) {
    if (mode == RNN_LSTM) {
      if (!is_seq(s[3]) || s[3]->n != 2) return kfail(k, "hx: expected a tuple (h_0, c_0)");
      if (!(h0 = get_tensor(k, s[3]->u.items[0], "h_0")) || !(c0 = get_tensor(k, s[3]->u.items[1], "c_0"))) return -1;
    } else if (!(h0 = get_tensor(k, s[3], "hx"))) {
      return -1;
    }
    for (int w = 0; w < 2; w++) {
      const OxTensor *t = w ? c0 : h0;
      if (!t) continue;
      int64_t want[3] = {D * layers, N, H}, wr = batched ? 3 : 2;
      if (!batched) want[1] = H;
      bool good = t->rank == wr && t->dtype == x->dtype;
      for (int i = 0; good && i < wr; i++) good = t->shape[i] == want[i];
      if (!good) {
        char e[128], g[128];
        shape_str((int)wr, want, e, sizeof e);
        shape_str(t->rank, t->shape, g, sizeof g);
        return kfail(k, "%s is %s %s, expected %s %s", w ? "c_0" : "h_0", ox_dtype_abbr(t->dtype), g, ox_dtype_abbr(x->dtype), e);
      }
    }
  }
  OxDType dt = x->dtype;
  int64_t osh[3], hsh[3];
  int hr = batched ? 3 : 2;
  if (batched) {
    osh[0] = bf ? N : T, osh[1] = bf ? T : N, osh[2] = D * H;
    hsh[0] = D * layers, hsh[1] = N, hsh[2] = H;
  } else {
    osh[0] = T, osh[1] = D * H;
    hsh[0] = D * layers, hsh[1] = H;
  }
  OxTensor *o = knew(k, dt, x->rank, osh), *hn = o ? knew(k, dt, hr, hsh) : NULL;
  OxTensor *cn = hn && mode == RNN_LSTM ? knew(k, dt, hr, hsh) : NULL;
  /* time-major work arrays: X [T, N, in], Y [T, N, D * H] */
  int64_t inmax = In > D * H ? In : D * H;
  double *X = malloc(nz(T * N * inmax) * sizeof *X), *Y = malloc(nz(T * N * D * H) * sizeof *Y);
  double *XI = malloc(nz(T * N * G * H) * sizeof *XI), *HH = malloc(nz(G * H) * sizeof *HH);
  double *h = malloc(nz(N * H) * sizeof *h), *cs = malloc(nz(N * H) * sizeof *cs);
  int rc = 0;
  if (!o || !hn || (mode == RNN_LSTM && !cn)) {
    rc = -1;
    goto done;
  }
  if (!X || !Y || !XI || !HH || !h || !cs) {
    rc = kfail(k, "out of memory");
    goto done;
  }
  for (int64_t t = 0; t < T; t++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < In; i++)
        X[(t * N + n) * In + i] = opmath(dt, ox_tensor_get(x, batched && bf ? (n * T + t) * In + i : (t * N + n) * In + i));
  int64_t in = In;
  for (int64_t l = 0; l < layers && rc == 0; l++) {
    for (int d = 0; d < D && rc == 0; d++) {
      const char *sfx = d ? "_reverse" : "";
      bool ok = true;
      char wih[48], whh[48], bih[48], bhh[48];
      snprintf(wih, sizeof wih, "weight_ih_l%lld%s", (long long)l, sfx);
      snprintf(whh, sizeof whh, "weight_hh_l%lld%s", (long long)l, sfx);
      snprintf(bih, sizeof bih, "bias_ih_l%lld%s", (long long)l, sfx);
      snprintf(bhh, sizeof bhh, "bias_hh_l%lld%s", (long long)l, sfx);
      double *Wi = seq_doubles(k, s[1], "", wih, dt, G * H, in, true, &ok);
      double *Wh = ok ? seq_doubles(k, s[1], "", whh, dt, G * H, H, true, &ok) : NULL;
      double *Bi = ok ? seq_doubles(k, s[1], "", bih, dt, 0, G * H, bias, &ok) : NULL;
      double *Bh = ok ? seq_doubles(k, s[1], "", bhh, dt, 0, G * H, bias, &ok) : NULL;
      if (!ok) {
        rc = -1;
      } else {
        gemm(X, Wi, XI, T * N, in, G * H, true); /* every step's input part at once */
        int64_t row = l * D + d;
        for (int64_t i = 0; i < N * H; i++) {
          h[i] = h0 ? opmath(dt, ox_tensor_get(h0, row * N * H + i)) : 0.0;
          cs[i] = c0 ? opmath(dt, ox_tensor_get(c0, row * N * H + i)) : 0.0;
        }
        for (int64_t step = 0; step < T; step++) {
          int64_t t = d ? T - 1 - step : step;
          for (int64_t n = 0; n < N; n++) {
            double *hn_ = h + n * H, *cn_ = cs + n * H;
            const double *xi = XI + (t * N + n) * G * H;
            gemm(hn_, Wh, HH, 1, H, G * H, true);
            double nh[4096], *nhp = H <= 4096 ? nh : malloc((size_t)H * sizeof *nhp);
            if (!nhp) {
              rc = kfail(k, "out of memory");
              break;
            }
            for (int64_t j = 0; j < H; j++) {
              double v;
              if (mode == RNN_GRU) {
                double bi_r = Bi ? Bi[j] : 0, bi_z = Bi ? Bi[H + j] : 0, bi_n = Bi ? Bi[2 * H + j] : 0;
                double bh_r = Bh ? Bh[j] : 0, bh_z = Bh ? Bh[H + j] : 0, bh_n = Bh ? Bh[2 * H + j] : 0;
                double r = 1.0 / (1.0 + exp(-(xi[j] + bi_r + HH[j] + bh_r)));
                double z = 1.0 / (1.0 + exp(-(xi[H + j] + bi_z + HH[H + j] + bh_z)));
                double nn_ = tanh(xi[2 * H + j] + bi_n + r * (HH[2 * H + j] + bh_n));
                v = (1.0 - z) * nn_ + z * hn_[j];
              } else if (mode == RNN_LSTM) {
                double g4[4];
                for (int q = 0; q < 4; q++)
                  g4[q] = xi[q * H + j] + HH[q * H + j] + (Bi ? Bi[q * H + j] : 0) + (Bh ? Bh[q * H + j] : 0);
                double ig = 1.0 / (1.0 + exp(-g4[0])), fg = 1.0 / (1.0 + exp(-g4[1]));
                double gg = tanh(g4[2]), og = 1.0 / (1.0 + exp(-g4[3]));
                double c = opmath(dt, fg * cn_[j] + ig * gg);
                cn_[j] = c;
                v = og * tanh(c);
              } else {
                double a = xi[j] + HH[j] + (Bi ? Bi[j] : 0) + (Bh ? Bh[j] : 0);
                v = relu ? (isnan(a) ? a : a > 0 ? a : 0.0) : tanh(a);
              }
              nhp[j] = opmath(dt, v);
            }
            memcpy(hn_, nhp, (size_t)H * sizeof *hn_);
            if (nhp != nh) free(nhp);
            for (int64_t j = 0; j < H; j++) Y[(t * N + n) * D * H + d * H + j] = hn_[j];
          }
          if (rc) break;
        }
        for (int64_t i = 0; rc == 0 && i < N * H; i++) {
          ox_tensor_set(hn, row * N * H + i, h[i]);
          if (cn) ox_tensor_set(cn, row * N * H + i, cs[i]);
        }
      }
      free(Wi), free(Wh), free(Bi), free(Bh);
    }
    if (rc == 0) { /* the next layer reads this one's output */
      memcpy(X, Y, (size_t)(T * N * D * H) * sizeof *X);
      in = D * H;
    }
  }
  for (int64_t t = 0; rc == 0 && t < T; t++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < D * H; j++)
        ox_tensor_set(o, batched && bf ? (n * T + t) * D * H + j : (t * N + n) * D * H + j, Y[(t * N + n) * D * H + j]);
done:
  free(X), free(Y), free(XI), free(HH), free(h), free(cs);
  if (rc != 0) {
    ox_tensor_free(o);
    ox_tensor_free(hn);
    ox_tensor_free(cn);
    return -1;
  }
  V *res = ox_rt_seq(OX_RT_TUPLE, 2);
  res->u.items[0] = ox_rt_tensor(o);
  if (mode == RNN_LSTM) {
    V *hc = ox_rt_seq(OX_RT_TUPLE, 2);
    hc->u.items[0] = ox_rt_tensor(hn);
    hc->u.items[1] = ox_rt_tensor(cn);
    res->u.items[1] = hc;
  } else {
    res->u.items[1] = ox_rt_tensor(hn);
  }
  *out = res;
  return 0;
}

static int k_gru(K *k, V *const *s, V **out) { return rnn_kernel(k, s, RNN_GRU, out); }
static int k_lstm(K *k, V *const *s, V **out) { return rnn_kernel(k, s, RNN_LSTM, out); }
static int k_rnn(K *k, V *const *s, V **out) { return rnn_kernel(k, s, RNN_TANH_RELU, out); }

/* torchvision.models.swin_transformer._get_relative_position_bias(table, index, window_size):
 * out[0, h, i, j] = table[index[i * N + j], h] for the N = w0 * w1 tokens of a window */
static int k_relative_position_bias(K *k, V *const *s, V **out) {
  const OxTensor *tab = get_tensor(k, s[0], "relative_position_bias_table");
  const OxTensor *ix = tab ? get_tensor(k, s[1], "relative_position_index") : NULL;
  int64_t ws[2];
  if (!ix || !get_pair(k, s[2], "window_size", 1, ws)) return -1;
  if (tab->rank != 2) return kfail(k, "relative_position_bias_table must be 2-D [entries, heads], got %d-D", tab->rank);
  if (is_float_dt(ix->dtype) || ix->dtype == OX_DT_BOOL) return kfail(k, "relative_position_index must hold integers");
  if (ws[0] <= 0 || ws[1] <= 0) return kfail(k, "window_size must be positive");
  int64_t n = ws[0] * ws[1], heads = tab->shape[1], rows = tab->shape[0];
  if (ix->numel != n * n)
    return kfail(k, "relative_position_index has %lld entries, a %lldx%lld window needs %lld", (long long)ix->numel,
                 (long long)ws[0], (long long)ws[1], (long long)(n * n));
  OxTensor *o = knew(k, tab->dtype, 4, (const int64_t[]){1, heads, n, n});
  if (!o) return -1;
  for (int64_t t = 0; t < n * n; t++) {
    int64_t r = ox_tensor_get_i64(ix, t);
    if (r < 0 || r >= rows) {
      ox_tensor_free(o);
      return kfail(k, "index %lld is out of bounds for a table of %lld entries", (long long)r, (long long)rows);
    }
    for (int64_t h = 0; h < heads; h++) ox_tensor_set(o, h * n * n + t, ox_tensor_get(tab, r * heads + h));
  }
  return ret_tensor(o, out);
}

/* torchvision.models.swin_transformer._patch_merging_pad(x): x [..., H, W, C] padded with zeros to
 * even H and W, then its 2x2 neighbourhoods side by side: [..., H/2, W/2, 4C] with the channels of
 * (2i, 2j), (2i+1, 2j), (2i, 2j+1), (2i+1, 2j+1) in that order */
static int k_patch_merging_pad(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "x");
  if (!x) return -1;
  if (x->rank < 3) return kfail(k, "expected [..., H, W, C], got %d-D", x->rank);
  int r = x->rank;
  int64_t H = x->shape[r - 3], W = x->shape[r - 2], C = x->shape[r - 1];
  int64_t sh[MAXR];
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)r);
  sh[r - 3] = (H + 1) / 2, sh[r - 2] = (W + 1) / 2, sh[r - 1] = 4 * C;
  OxTensor *o = knew(k, x->dtype, r, sh);
  if (!o) return -1;
  int64_t lead = ox_shape_numel(r - 3, x->shape);
  bool ip = is_int_store(x->dtype);
  static const int dh[4] = {0, 1, 0, 1}, dw[4] = {0, 0, 1, 1};
  for (int64_t b = 0; b < lead; b++)
    for (int64_t i = 0; i < sh[r - 3]; i++)
      for (int64_t j = 0; j < sh[r - 2]; j++)
        for (int q = 0; q < 4; q++) {
          int64_t h = 2 * i + dh[q], w = 2 * j + dw[q];
          if (h >= H || w >= W) continue; /* the zero padding */
          int64_t src = ((b * H + h) * W + w) * C, dst = ((b * sh[r - 3] + i) * sh[r - 2] + j) * 4 * C + q * C;
          for (int64_t c = 0; c < C; c++) {
            if (ip) ox_tensor_set_i64(o, dst + c, ox_tensor_get_i64(x, src + c));
            else ox_tensor_set(o, dst + c, ox_tensor_get(x, src + c));
          }
        }
  return ret_tensor(o, out);
}

/* torchvision.models.swin_transformer.shifted_window_attention (Swin V1, and V2 with logit_scale:
 * cosine attention, keys without bias): input [B, H, W, C]
 * padded with zeros to whole windows, rolled by -shift (no shift along a dim the window covers),
 * cut into windows of N tokens; per window and head softmax(q k^T / sqrt(C / heads) + bias +
 * mask) v, where the mask (-100) keeps tokens of different regions of the rolled grid apart;
 * the heads through proj; rolled back and cropped. Its dropouts are F.dropout's default
 * training=True (even in eval), so only p = 0 is reproducible. */
static int k_shifted_window_attention(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input"), *wq = x ? get_tensor(k, s[1], "qkv_weight") : NULL;
  const OxTensor *wp = wq ? get_tensor(k, s[2], "proj_weight") : NULL;
  const OxTensor *rpb = wp ? get_tensor(k, s[3], "relative_position_bias") : NULL;
  if (!rpb) return -1;
  const OxTensor *bq = NULL, *bp = NULL, *ls = NULL;
  if (!is_none(s[9]) && !(bq = get_tensor(k, s[9], "qkv_bias"))) return -1;
  if (!is_none(s[10]) && !(bp = get_tensor(k, s[10], "proj_bias"))) return -1;
  if (!is_none(s[11]) && !(ls = get_tensor(k, s[11], "logit_scale"))) return -1;
  int64_t ws[2], sh[2], heads;
  double pa = 0.0, pd = 0.0;
  if (!get_pair(k, s[4], "window_size", 1, ws) || !get_int(k, s[5], "num_heads", &heads) ||
      !get_pair(k, s[6], "shift_size", 0, sh))
    return -1;
  if ((!is_none(s[7]) && !get_num(k, s[7], "attention_dropout", &pa)) || (!is_none(s[8]) && !get_num(k, s[8], "dropout", &pd)))
    return -1;
  if (pa != 0.0 || pd != 0.0)
    return kfail(k, "random op (dropout %g, attention_dropout %g, applied even in eval): cannot be reproduced", pd, pa);
  if (!need_float(k, x, "input") || !same_dtype(k, x, wq) || !same_dtype(k, x, wp) || !same_dtype(k, x, rpb) ||
      (bq && !same_dtype(k, x, bq)) || (bp && !same_dtype(k, x, bp)))
    return -1;
  if (x->rank != 4) return kfail(k, "input must be [B, H, W, C], got %d-D", x->rank);
  int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
  if (ws[0] <= 0 || ws[1] <= 0 || sh[0] < 0 || sh[1] < 0) return kfail(k, "window_size must be positive and shift_size not negative");
  if (heads <= 0 || C % heads) return kfail(k, "%lld channels are not divisible by num_heads %lld", (long long)C, (long long)heads);
  int64_t N = ws[0] * ws[1];
  if (wq->rank != 2 || wq->shape[0] != 3 * C || wq->shape[1] != C) return kfail(k, "qkv_weight must be [%lld, %lld]", (long long)(3 * C), (long long)C);
  if (wp->rank != 2 || wp->shape[0] != C || wp->shape[1] != C) return kfail(k, "proj_weight must be [%lld, %lld]", (long long)C, (long long)C);
  if ((bq && bq->numel != 3 * C) || (bp && bp->numel != C)) return kfail(k, "qkv_bias must have %lld and proj_bias %lld elements", (long long)(3 * C), (long long)C);
  if (ls && ls->numel != heads) return kfail(k, "logit_scale has %lld elements, one per head (%lld) expected", (long long)ls->numel, (long long)heads);
  if (rpb->numel != heads * N * N)
    return kfail(k, "relative_position_bias has %lld elements, [1, %lld, %lld, %lld] expected", (long long)rpb->numel,
                 (long long)heads, (long long)N, (long long)N);
  int64_t pH = H + (ws[0] - H % ws[0]) % ws[0], pW = W + (ws[1] - W % ws[1]) % ws[1];
  int64_t s0 = ws[0] >= pH ? 0 : sh[0] % pH, s1 = ws[1] >= pW ? 0 : sh[1] % pW;
  bool shifted = s0 + s1 > 0;
  int64_t hd = C / heads;
  OxTensor *o = knew(k, x->dtype, 4, x->shape);
  double *X = to_doubles(k, x), *WQ = to_doubles(k, wq), *WP = to_doubles(k, wp), *T = malloc(nz(N * C) * sizeof *T);
  double *QKV = malloc(nz(N * 3 * C) * sizeof *QKV), *A = malloc(nz(N * C) * sizeof *A), *Y = malloc(nz(N * C) * sizeof *Y);
  double *P = malloc(nz(N) * sizeof *P);
  int64_t *lab = malloc(nz(N) * sizeof *lab), *pos = malloc(nz(N) * 2 * sizeof *pos);
  int rc = 0;
  if (!o || !X || !WQ || !WP || !T || !QKV || !A || !Y || !P || !lab || !pos) {
    rc = o ? kfail(k, "out of memory") : -1;
    goto done;
  }
  for (int64_t i = 0; i < x->numel; i++) X[i] = opmath(x->dtype, X[i]);
  for (int64_t i = 0; i < wq->numel; i++) WQ[i] = opmath(x->dtype, WQ[i]);
  for (int64_t i = 0; i < wp->numel; i++) WP[i] = opmath(x->dtype, WP[i]);
  double scale = 1.0 / sqrt((double)hd);
  for (int64_t b = 0; b < B; b++)
    for (int64_t wh = 0; wh < pH / ws[0]; wh++)
      for (int64_t ww = 0; ww < pW / ws[1]; ww++) {
        /* the window's tokens: position (ph, pw) of the rolled grid holds x[(ph + s0) % pH, (pw + s1) % pW] */
        for (int64_t t = 0; t < N; t++) {
          int64_t ph = wh * ws[0] + t / ws[1], pw = ww * ws[1] + t % ws[1];
          int64_t h = (ph + s0) % pH, w = (pw + s1) % pW;
          pos[2 * t] = h, pos[2 * t + 1] = w;
          /* the mask's regions of the rolled grid: [0, pH - ws), [pH - ws, pH - s), [pH - s, pH) */
          int rh = ph < pH - ws[0] ? 0 : ph < pH - s0 ? 1 : 2, rw = pw < pW - ws[1] ? 0 : pw < pW - s1 ? 1 : 2;
          lab[t] = rh * 3 + rw;
          for (int64_t c = 0; c < C; c++) T[t * C + c] = h < H && w < W ? X[((b * H + h) * W + w) * C + c] : 0.0;
        }
        gemm(T, WQ, QKV, N, C, 3 * C, true);
        if (bq) /* V2 (logit_scale) leaves the keys without bias */
          for (int64_t t = 0; t < N; t++)
            for (int64_t j = 0; j < 3 * C; j++)
              if (!ls || j < C || j >= 2 * C) QKV[t * 3 * C + j] += opmath(x->dtype, ox_tensor_get(bq, j));
        if (ls) /* V2: cosine attention, q and k of each head normalized to unit length (F.normalize) */
          for (int64_t t = 0; t < N; t++)
            for (int64_t hh = 0; hh < heads; hh++)
              for (int part = 0; part < 2; part++) {
                double *v = QKV + t * 3 * C + part * C + hh * hd, nrm = 0.0;
                for (int64_t d = 0; d < hd; d++) nrm += v[d] * v[d];
                nrm = sqrt(nrm);
                if (nrm < 1e-12) nrm = 1e-12;
                for (int64_t d = 0; d < hd; d++) v[d] /= nrm;
              }
        for (int64_t hh = 0; hh < heads; hh++)
          for (int64_t t = 0; t < N; t++) {
            const double *q = QKV + t * 3 * C + hh * hd;
            /* V2: exp(min(logit_scale, log 100)) per head instead of 1 / sqrt(head dim) */
            double sc = scale;
            if (ls) {
              double l = opmath(x->dtype, ox_tensor_get(ls, hh));
              sc = exp(l < log(100.0) ? l : log(100.0));
            }
            for (int64_t u = 0; u < N; u++) {
              const double *kk = QKV + u * 3 * C + C + hh * hd;
              double acc = 0.0;
              if (ls) {
                for (int64_t d = 0; d < hd; d++) acc += q[d] * kk[d];
                acc *= sc;
              } else {
                for (int64_t d = 0; d < hd; d++) acc += q[d] * scale * kk[d];
              }
              acc += opmath(x->dtype, ox_tensor_get(rpb, (hh * N + t) * N + u));
              if (shifted && lab[t] != lab[u]) acc += -100.0;
              P[u] = acc;
            }
            softmax_row(P, N);
            double *a = A + t * C + hh * hd;
            for (int64_t d = 0; d < hd; d++) a[d] = 0.0;
            for (int64_t u = 0; u < N; u++) {
              const double *v = QKV + u * 3 * C + 2 * C + hh * hd;
              for (int64_t d = 0; d < hd; d++) a[d] += P[u] * v[d];
            }
          }
        gemm(A, WP, Y, N, C, C, true);
        /* rolled back: the token goes where it came from; the padding is cropped */
        for (int64_t t = 0; t < N; t++) {
          int64_t h = pos[2 * t], w = pos[2 * t + 1];
          if (h >= H || w >= W) continue;
          for (int64_t c = 0; c < C; c++)
            ox_tensor_set(o, ((b * H + h) * W + w) * C + c, Y[t * C + c] + (bp ? opmath(x->dtype, ox_tensor_get(bp, c)) : 0.0));
        }
      }
done:
  free(X), free(WQ), free(WP), free(T), free(QKV), free(A), free(Y), free(P), free(lab), free(pos);
  if (rc != 0) {
    if (o) ox_tensor_free(o);
    return -1;
  }
  return ret_tensor(o, out);
}

/* adaptive_avg_pool2d(input, output_size) */
static int k_adaptive_avg_pool2d(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "input");
  if (!x || !need_float(k, x, "input")) return -1;
  if (x->rank != 3 && x->rank != 4) return kfail(k, "expected 3-D or 4-D input, got %d-D", x->rank);
  int lead = x->rank - 2;
  int64_t H = x->shape[lead], W = x->shape[lead + 1], os[2];
  if (is_seq(s[1])) {
    if (s[1]->n != 2 && s[1]->n != 1) return kfail(k, "output_size must have 1 or 2 entries");
    for (uint32_t i = 0; i < 2; i++) {
      const V *it = s[1]->u.items[s[1]->n == 1 ? 0 : i];
      if (is_none(it))
        os[i] = i ? W : H;
      else if (!get_int(k, it, "output_size", &os[i]))
        return -1;
    }
  } else if (!get_int(k, s[1], "output_size", &os[0])) {
    return -1;
  } else {
    os[1] = os[0];
  }
  if (os[0] < 0 || os[1] < 0) return kfail(k, "output_size must be non-negative");
  if ((H == 0 || W == 0) && os[0] * os[1] > 0) return kfail(k, "input spatial size must be non-zero");
  int64_t sh[4];
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)lead);
  sh[lead] = os[0];
  sh[lead + 1] = os[1];
  OxTensor *o = knew(k, x->dtype, x->rank, sh);
  if (!o) return -1;
  int64_t planes = ox_shape_numel(lead, x->shape);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < os[0]; oh++) {
      int64_t h0 = (oh * H) / os[0], h1 = ((oh + 1) * H + os[0] - 1) / os[0];
      for (int64_t ow = 0; ow < os[1]; ow++) {
        int64_t w0 = (ow * W) / os[1], w1 = ((ow + 1) * W + os[1] - 1) / os[1];
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) sum += opmath(x->dtype, ox_tensor_get(x, (p * H + ih) * W + iw));
        ox_tensor_set(o, (p * os[0] + oh) * os[1] + ow, sum / (double)((h1 - h0) * (w1 - w0)));
      }
    }
  return ret_tensor(o, out);
}

/* ------------------------------------------------------------------ to / size */

static int k_to(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  OxDType dt = x->dtype;
  const V *d = s[1];
  if (d && d->kind == OX_RT_DTYPE) {
    if (!get_dtype_opt(k, d, "dtype", &dt)) return -1;
  } else if (d && d->kind == OX_RT_TENSOR) {
    dt = d->u.t->dtype; /* x.to(other) */
  } else if (!(is_none(d) || d->kind == OX_RT_OPAQUE || d->kind == OX_RT_STR)) {
    /* devices (cpu, cuda) do not change values */
    return kfail(k, "dtype: expected a dtype, tensor or device, got %s", ox_rt_kind_name(d->kind));
  }
  OxTensor *o = knew(k, dt, x->rank, x->shape);
  if (!o) return -1;
  copy_elems(o, 0, x, 0, x->numel);
  return ret_tensor(o, out);
}

static int k_size(K *k, V *const *s, V **out) {
  const OxTensor *x = get_tensor(k, s[0], "self");
  if (!x) return -1;
  if (!is_none(s[1])) {
    int64_t dim;
    int d;
    if (!get_int(k, s[1], "dim", &dim)) return -1;
    if (x->rank == 0) return kfail(k, "dimension specified as %lld but tensor has no dimensions", (long long)dim);
    if (!norm_dim(k, dim, x->rank, &d)) return -1;
    *out = ox_rt_int(x->shape[d]);
    return 0;
  }
  V *res = ox_rt_seq(OX_RT_TUPLE, (uint32_t)x->rank);
  for (int i = 0; i < x->rank; i++) res->u.items[i] = ox_rt_int(x->shape[i]);
  *out = res;
  return 0;
}

/* ------------------------------------------------------------------ the table */

static const struct {
  const char *name;
  KFn fn;
} kernels[] = {
  {"linear", k_linear},
  {"addmm", k_addmm},
  {"mm", k_mm},
  {"bmm", k_bmm},
  {"baddbmm", k_baddbmm},
  {"matmul", k_matmul},
  {"einsum", k_einsum},
  {"grouped_mm", k_grouped_mm},
  {"layer_norm", k_layer_norm},
  {"native_layer_norm", k_native_layer_norm},
  {"tanh", k_tanh},
  {"sigmoid", k_sigmoid},
  {"relu", k_relu},
  {"gelu", k_gelu},
  {"silu", k_silu},
  {"dropout", k_dropout},
  {"clamp", k_clamp},
  {"nan_to_num", k_nan_to_num},
  {"detach", k_copy},
  {"clone", k_copy},
  {"contiguous", k_copy},
  {"neg", k_neg},
  {"exp", k_exp},
  {"log", k_log},
  {"sqrt", k_sqrt},
  {"rsqrt", k_rsqrt},
  {"add", k_add},
  {"sub", k_sub},
  {"mul", k_mul},
  {"div", k_div},
  {"pow", k_pow},
  {"where", k_where},
  {"sum", k_sum},
  {"mean", k_mean},
  {"softmax", k_softmax},
  {"split", k_split},
  {"split_with_sizes", k_split_with_sizes},
  {"chunk", k_chunk},
  {"unbind", k_unbind},
  {"cat", k_cat},
  {"stack", k_stack},
  {"getitem", k_getitem},
  {"select", k_select},
  {"slice", k_slice},
  {"narrow", k_narrow},
  {"squeeze", k_squeeze},
  {"unsqueeze", k_unsqueeze},
  {"view", k_view},
  {"reshape", k_view},
  {"flatten", k_flatten},
  {"unflatten", k_unflatten},
  {"permute", k_permute},
  {"transpose", k_transpose},
  {"t", k_t},
  {"movedim", k_movedim},
  {"expand", k_expand},
  {"embedding", k_embedding},
  {"embedding_bag", k_embedding_bag},
  {"conv2d", k_conv2d},
  {"batch_norm", k_batch_norm},
  {"max_pool2d", k_max_pool2d},
  {"adaptive_avg_pool2d", k_adaptive_avg_pool2d},
  {"avg_pool2d", k_avg_pool2d},
  {"multi_head_attention", k_multi_head_attention},
  {"eq", k_eq},
  {"ne", k_ne},
  {"lt", k_lt},
  {"le", k_le},
  {"gt", k_gt},
  {"ge", k_ge},
  {"logical_not", k_logical_not},
  {"bitwise_not", k_bitwise_not},
  {"bitwise_and", k_bitwise_and},
  {"bitwise_or", k_bitwise_or},
  {"bitwise_xor", k_bitwise_xor},
  {"masked_fill", k_masked_fill},
  {"triu", k_triu},
  {"tril", k_tril},
  {"ones", k_ones},
  {"zeros", k_zeros},
  {"full", k_full},
  {"arange", k_arange},
  {"transformer_encoder_layer", k_transformer_encoder_layer},
  {"transformer_encoder", k_transformer_encoder},
  {"gru", k_gru},
  {"lstm", k_lstm},
  {"rnn", k_rnn},
  {"hardswish", k_hardswish},
  {"hardsigmoid", k_hardsigmoid},
  {"stochastic_depth", k_stochastic_depth},
  {"identity", k_identity},
  {"interpolate", k_interpolate},
  {"shifted_window_attention", k_shifted_window_attention},
  {"relative_position_bias", k_relative_position_bias},
  {"patch_merging_pad", k_patch_merging_pad},
  {"to", k_to},
  {"size", k_size},
};

/* Names straight from the X-macro table, so this file compiles whatever ops the .def holds
 * and the kernel for an op is found by its canonical name. */
static const char *const def_names[OX_OPID_COUNT] = {
  [OX_OPID_NONE] = NULL,
#define OX_OPDEF(id, name, flags, schema) [OX_OPID_##id] = name,
#include "ops/ox_ops.def"
#undef OX_OPDEF
};

const char *ox_kernel_op_name(OxOpId op) {
  return (unsigned)op < OX_OPID_COUNT && def_names[op] ? def_names[op] : "?";
}

OxOpId ox_kernel_op_by_name(const char *name) {
  for (int i = 1; i < OX_OPID_COUNT; i++)
    if (def_names[i] && strcmp(def_names[i], name) == 0) return (OxOpId)i;
  return OX_OPID_NONE;
}

/* The kernel of each op id, found by name once (pthread_once, as the op table): the
 * interpreter asks for every node it runs, and a numeric check runs thousands of regions. */
static KFn kernel_by_op[OX_OPID_COUNT];
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void kernel_table_init(void) {
  for (int op = 1; op < OX_OPID_COUNT; op++) {
    if (!def_names[op]) continue;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
      if (strcmp(kernels[i].name, def_names[op]) == 0) {
        kernel_by_op[op] = kernels[i].fn;
        break;
      }
  }
}

static KFn kernel_of(OxOpId op) {
  if ((unsigned)op >= OX_OPID_COUNT) return NULL;
  pthread_once(&kernel_once, kernel_table_init);
  return kernel_by_op[op];
}

bool ox_kernel_exists(OxOpId op) { return kernel_of(op) != NULL; }

int ox_kernel_run(OxKernelCtx *k, OxOpId op, OxRtValue *const *slots, uint32_t n_slots, OxRtValue **out) {
  *out = NULL;
  k->op_name = ox_kernel_op_name(op);
  KFn fn = kernel_of(op);
  if (!fn) {
    if (k->err && k->errcap) snprintf(k->err, k->errcap, "no kernel for %s", k->op_name);
    return -1;
  }
  /* Missing slots read as None; kernels never take references to slot values they did not
   * get from the caller, so a stack None is safe here. */
  OxRtValue none;
  memset(&none, 0, sizeof none);
  none.kind = OX_RT_NONE;
  none.refs = 1u << 30;
  OxRtValue *s[OX_MAX_SLOTS];
  for (uint32_t i = 0; i < OX_MAX_SLOTS; i++) s[i] = (i < n_slots && slots[i]) ? slots[i] : &none;
  int rc = fn(k, s, out);
  if (rc != 0 && *out) {
    ox_rt_unref(*out);
    *out = NULL;
  }
  return rc;
}
