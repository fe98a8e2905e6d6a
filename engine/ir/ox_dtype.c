/* ox_dtype.c - dtype names: Inductor abbreviations (torch/utils/_dtype_abbrs.py) and
 * torch.* spellings, including the aliases torch accepts (torch.float, torch.long ...). */
#include <stdbool.h>
#include <string.h>

#include "ir/ox_graph.h"

typedef struct {
  OxDType t;
  const char *abbr;
  const char *torch;
  size_t size;
  bool is_float;
} DTypeInfo;

static const DTypeInfo dtypes[] = {
  {OX_DT_UNKNOWN, "?", "torch.unknown", 0, false},
  {OX_DT_F32, "f32", "torch.float32", 4, true},
  {OX_DT_F64, "f64", "torch.float64", 8, true},
  {OX_DT_F16, "f16", "torch.float16", 2, true},
  {OX_DT_BF16, "bf16", "torch.bfloat16", 2, true},
  {OX_DT_I64, "i64", "torch.int64", 8, false},
  {OX_DT_I32, "i32", "torch.int32", 4, false},
  {OX_DT_I16, "i16", "torch.int16", 2, false},
  {OX_DT_I8, "i8", "torch.int8", 1, false},
  {OX_DT_U8, "u8", "torch.uint8", 1, false},
  {OX_DT_U16, "u16", "torch.uint16", 2, false},
  {OX_DT_U32, "u32", "torch.uint32", 4, false},
  {OX_DT_U64, "u64", "torch.uint64", 8, false},
  {OX_DT_BOOL, "b8", "torch.bool", 1, false},
  {OX_DT_C32, "c32", "torch.complex32", 4, false},
  {OX_DT_C64, "c64", "torch.complex64", 8, false},
  {OX_DT_C128, "c128", "torch.complex128", 16, false},
  {OX_DT_F8E4M3FN, "f8e4m3fn", "torch.float8_e4m3fn", 1, true},
  {OX_DT_F8E5M2, "f8e5m2", "torch.float8_e5m2", 1, true},
  {OX_DT_F8E4M3FNUZ, "f8e4m3fnuz", "torch.float8_e4m3fnuz", 1, true},
  {OX_DT_F8E5M2FNUZ, "f8e5m2fnuz", "torch.float8_e5m2fnuz", 1, true},
  {OX_DT_F8E8M0FNU, "f8e8m0fnu", "torch.float8_e8m0fnu", 1, true},
  {OX_DT_F4E2M1FNX2, "f4e2m1fnx2", "torch.float4_e2m1fn_x2", 1, true},
  {OX_DT_B16, "b16", "torch.bits16", 2, false},
  {OX_DT_B1X8, "b1x8", "torch.bits1x8", 1, false},
};

static const struct {
  const char *alias;
  OxDType t;
} aliases[] = {
  {"float", OX_DT_F32},  {"double", OX_DT_F64}, {"half", OX_DT_F16},   {"long", OX_DT_I64},
  {"int", OX_DT_I32},    {"short", OX_DT_I16},  {"cfloat", OX_DT_C64}, {"cdouble", OX_DT_C128},
  {"chalf", OX_DT_C32},
};

_Static_assert(sizeof dtypes / sizeof dtypes[0] == OX_DT_COUNT, "dtype table covers the enum");

const char *ox_dtype_abbr(OxDType t) { return (unsigned)t < OX_DT_COUNT ? dtypes[t].abbr : "?"; }

const char *ox_dtype_torch_name(OxDType t) {
  return (unsigned)t < OX_DT_COUNT ? dtypes[t].torch : "torch.unknown";
}

size_t ox_dtype_size(OxDType t) { return (unsigned)t < OX_DT_COUNT ? dtypes[t].size : 0; }

bool ox_dtype_is_float(OxDType t) { return (unsigned)t < OX_DT_COUNT && dtypes[t].is_float; }

static bool eq(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

OxDType ox_dtype_from_abbr(const char *s, size_t n) {
  for (int i = 1; i < OX_DT_COUNT; i++)
    if (eq(s, n, dtypes[i].abbr)) return (OxDType)i;
  return OX_DT_UNKNOWN;
}

OxDType ox_dtype_from_torch_name(const char *s, size_t n) {
  if (n > 6 && memcmp(s, "torch.", 6) == 0) {
    s += 6;
    n -= 6;
  }
  for (int i = 1; i < OX_DT_COUNT; i++)
    if (eq(s, n, dtypes[i].torch + 6)) return (OxDType)i;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (eq(s, n, aliases[i].alias)) return aliases[i].t;
  return OX_DT_UNKNOWN;
}
