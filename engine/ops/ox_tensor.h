/* ox_tensor.h - dense CPU tensors and runtime values for the reference interpreter.
 *
 * A tensor is contiguous row-major storage with an int64 shape of at most OX_TENSOR_MAX_RANK
 * dims. Storage is chosen by dtype so every supported dtype has one simple C type:
 *   f32, f16, bf16 -> float   (f16/bf16 values are rounded to their precision on every store,
 *                              which reproduces torch's "compute in f32, store in low precision")
 *   f64            -> double
 *   i64, i32       -> int64_t (i32 stores wrap to int32 like torch's int32 arithmetic)
 *   bool (b8)      -> uint8_t (0 or 1)
 * Other dtypes (complex, fp8, u8 ...) are refused by ox_tensor_new.
 *
 * Runtime values (OxRtValue) are what flows between nodes in the interpreter: a tensor, a
 * tuple/list of runtime values, a Python scalar (int/float/bool), None, or one of the
 * argument-only kinds (string, dtype, slice, Ellipsis, opaque text such as a device).
 * They are reference counted; a tensor is owned by exactly one runtime value.
 *
 * Randomness comes from our own xoshiro256** seeded through splitmix64, so seeded fills are
 * identical across runs, machines and compilers.
 */
#ifndef OX_TENSOR_H
#define OX_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OX_TENSOR_MAX_RANK 8

typedef enum OxStorage {
  OX_ST_NONE = 0,
  OX_ST_F32, /* float: f32, f16, bf16 */
  OX_ST_F64, /* double: f64 */
  OX_ST_I64, /* int64_t: i64, i32 */
  OX_ST_U8   /* uint8_t: bool */
} OxStorage;

typedef struct OxTensor {
  OxDType dtype;
  int32_t rank;
  int64_t shape[OX_TENSOR_MAX_RANK];
  int64_t numel;    /* product of shape (1 for rank 0) */
  union {
    void *p;
    float *f;
    double *d;
    int64_t *i;
    uint8_t *b;
  } data;           /* owned; numel elements of the storage type */
} OxTensor;

/* The storage class of a dtype; OX_ST_NONE for dtypes the interpreter does not support.
 * Inline, as the element access below: the reference kernels call them once per element. */
static inline OxStorage ox_dtype_storage(OxDType dt) {
  switch (dt) {
  case OX_DT_F32:
  case OX_DT_F16:
  case OX_DT_BF16: return OX_ST_F32;
  case OX_DT_F64: return OX_ST_F64;
  case OX_DT_I64:
  case OX_DT_I32: return OX_ST_I64;
  case OX_DT_BOOL: return OX_ST_U8;
  default: return OX_ST_NONE;
  }
}
bool ox_tensor_dtype_supported(OxDType dt);

/* Zero-filled tensor. NULL if the dtype is unsupported, rank is out of range, a dim is
 * negative, the element count overflows, or memory runs out. shape may be NULL for rank 0. */
OxTensor *ox_tensor_new(OxDType dt, int32_t rank, const int64_t *shape);
/* The same with its elements not set, for a caller that writes every one of them (zeroing
 * fresh memory costs as much as a pass over it). */
OxTensor *ox_tensor_new_unset(OxDType dt, int32_t rank, const int64_t *shape);
void ox_tensor_free(OxTensor *t); /* NULL is a no-op */
OxTensor *ox_tensor_clone(const OxTensor *t);
/* A copy converted to dt (float->int truncates toward zero like torch; NaN/inf -> 0). */
OxTensor *ox_tensor_cast(const OxTensor *t, OxDType dt);
/* Element count of a shape, -1 on overflow or negative dims. */
int64_t ox_shape_numel(int32_t rank, const int64_t *shape);
bool ox_tensor_same_shape(const OxTensor *a, const OxTensor *b);

/* Element access by flat row-major index. set rounds to the dtype (f16/bf16 precision,
 * float rounding for f32, truncation + int32 wrap for integers, !=0 for bool);
 * ox_tensor_set_rounded is its out-of-line part for the dtypes other than f32 and f64. */
static inline double ox_tensor_get(const OxTensor *t, int64_t i) {
  switch (ox_dtype_storage(t->dtype)) {
  case OX_ST_F32: return (double)t->data.f[i];
  case OX_ST_F64: return t->data.d[i];
  case OX_ST_I64: return (double)t->data.i[i];
  case OX_ST_U8: return (double)t->data.b[i];
  default: return 0.0;
  }
}
void ox_tensor_set_rounded(OxTensor *t, int64_t i, double v);
static inline void ox_tensor_set(OxTensor *t, int64_t i, double v) {
  if (t->dtype == OX_DT_F32)
    t->data.f[i] = (float)v;
  else if (t->dtype == OX_DT_F64)
    t->data.d[i] = v;
  else
    ox_tensor_set_rounded(t, i, v);
}
/* Exact integer access (integer/bool storage; floats are converted). */
int64_t ox_tensor_get_i64(const OxTensor *t, int64_t i);
void ox_tensor_set_i64(OxTensor *t, int64_t i, int64_t v);

/* Rounding of a value to a dtype's precision (identity for f64; ints truncate/wrap). */
double ox_dtype_round(OxDType dt, double v);
float ox_round_f16(double v);  /* IEEE binary16, round to nearest even, overflow -> inf */
float ox_round_bf16(double v); /* bfloat16, round to nearest even */
/* Largest finite value of a float dtype (used by nan_to_num); 0 for others. */
double ox_dtype_max(OxDType dt);

/* Formats "f32[2, 3]" into buf (snprintf-like return). */
int ox_tensor_describe(const OxTensor *t, char *buf, size_t cap);

/* ------------------------------------------------------------------ RNG */

typedef struct OxRng {
  uint64_t s[4];
} OxRng;

void ox_rng_seed(OxRng *r, uint64_t seed);
uint64_t ox_rng_next(OxRng *r);
double ox_rng_uniform(OxRng *r);                   /* [0, 1), 53 random bits */
int64_t ox_rng_int(OxRng *r, int64_t lo, int64_t hi); /* [lo, hi), hi > lo */
/* Stable 64-bit mix of a seed and a string (FNV-1a then splitmix64 finalizer): the per-node
 * seed for placeholder values, so a value depends only on (seed, name). */
uint64_t ox_seed_mix(uint64_t seed, const char *s);

/* Floats uniform in [lo, hi) (then rounded to the dtype); ints uniform in [ilo, ihi);
 * bool fair coin. */
void ox_tensor_fill_random(OxTensor *t, OxRng *r, double lo, double hi, int64_t ilo, int64_t ihi);
/* value[i] = scale * sin(freq * i + phase), computed in double, stored with dtype rounding
 * (the "fill" form of the JSON record section). */
void ox_tensor_fill_sin(OxTensor *t, double scale, double freq, double phase);

/* ------------------------------------------------------------------ comparison */

/* Element i passes when both are NaN, or both are the same infinity, or
 *   |got - want| <= atol * scale + rtol * |want|
 * where scale = max finite |want| over the tensor (1 if that is 0): "tolerance relative to
 * the output scale". Per dtype (ox_tolerance_for): f64 1e-10, f32 1e-5, f16 1e-2, bf16 2e-2
 * (atol = rtol = that number); integers and bool must match exactly. */
typedef struct OxTolerance {
  double atol, rtol;
} OxTolerance;

OxTolerance ox_tolerance_for(OxDType dt);

typedef struct OxCompare {
  bool pass;
  double max_abs;      /* max |got - want| over finite pairs */
  double max_rel;      /* max |got - want| / |want| over finite pairs with want != 0 */
  double scale;        /* output scale used */
  OxTolerance tol;     /* tolerance used */
  int64_t n_bad;       /* elements that failed */
  int64_t first_bad;   /* flat index of the first failure, -1 if none */
  char why[160];       /* first reason for failure ("shape f32[2, 3] vs f32[3, 2]", "element 4: nan vs 1") */
} OxCompare;

/* Compares got against want (the reference). tol NULL = ox_tolerance_for(want->dtype).
 * A dtype or shape mismatch fails. Returns res->pass. */
bool ox_tensor_compare(const OxTensor *got, const OxTensor *want, const OxTolerance *tol, OxCompare *res);

/* ------------------------------------------------------------------ runtime values */

typedef enum OxRtKind {
  OX_RT_NONE = 0,
  OX_RT_TENSOR,
  OX_RT_TUPLE,
  OX_RT_LIST,
  OX_RT_INT,
  OX_RT_FLOAT,
  OX_RT_BOOL,
  /* argument-only kinds (never produced by a kernel) */
  OX_RT_STR,
  OX_RT_DTYPE,
  OX_RT_SLICE,    /* items[0..2] = start, stop, step; each NONE or INT */
  OX_RT_ELLIPSIS,
  OX_RT_OPAQUE    /* device, memory_format and other constants we carry as text */
} OxRtKind;

typedef struct OxRtValue OxRtValue;
struct OxRtValue {
  OxRtKind kind;
  uint32_t refs;
  uint32_t n;           /* TUPLE, LIST, SLICE: item count */
  union {
    OxTensor *t;        /* TENSOR (owned) */
    OxRtValue **items;  /* TUPLE, LIST, SLICE (each item holds one reference) */
    int64_t i;
    double f;
    bool b;
    OxDType dtype;
  } u;
  char *s;              /* STR, OPAQUE, and DTYPE spelling: owned copy */
};

/* Constructors return a value with one reference. */
OxRtValue *ox_rt_none(void);
OxRtValue *ox_rt_tensor(OxTensor *t); /* takes ownership of t */
OxRtValue *ox_rt_int(int64_t i);
OxRtValue *ox_rt_float(double f);
OxRtValue *ox_rt_bool(bool b);
OxRtValue *ox_rt_dtype(OxDType dt);
OxRtValue *ox_rt_text(OxRtKind kind, const char *s); /* STR or OPAQUE */
OxRtValue *ox_rt_ellipsis(void);
/* A TUPLE/LIST/SLICE of n items, all NULL: fill items[i] with owned references. */
OxRtValue *ox_rt_seq(OxRtKind kind, uint32_t n);
OxRtValue *ox_rt_ref(OxRtValue *v);  /* returns v */
void ox_rt_unref(OxRtValue *v);      /* NULL is a no-op */
const char *ox_rt_kind_name(OxRtKind k);
bool ox_rt_is_scalar(const OxRtValue *v); /* INT, FLOAT or BOOL */
double ox_rt_scalar(const OxRtValue *v);  /* numeric value of a scalar */
/* The leaves of a value, nested tuples and lists flattened in order (a graph's outputs as
 * recorded or compared): appended to v[0..n), borrowed; free(f.v) when done. */
typedef struct OxRtFlat {
  const OxRtValue **v;
  uint32_t n, cap;
} OxRtFlat;
void ox_rt_flatten(const OxRtValue *v, OxRtFlat *f);

#ifdef __cplusplus
}
#endif
#endif
