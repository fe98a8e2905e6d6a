/* ox_json_config.c - the small JSON inputs: pass configuration files in PyTorch's shape
 * (pre_grad_fusion_options / post_grad_fusion_options) and --shapes files (a name -> shape and
 * dtype map, or safetensors' header), read with the document reader's located errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_mem.h"
#include "json/ox_json_private.h"
#include "load/ox_parse.h"
#include "ops/ox_shape.h"
#include "passes/ox_pass.h"

/* ================================================================== pass configuration */

/* {"pre_grad_fusion_options": {"batch_linear": {"min_fuse_set_size": 3}, ...},
 *  "post_grad_fusion_options": {...}} — PyTorch's shape. Presence enables a pass; the run
 * order is PyTorch's driver order (ox_pipeline_order_like_pytorch): normalization_pass, the
 * batch fusions, then the other passes, each group in the file's order. */

int ox_pipeline_from_config(const char *text, size_t len, const char *file, OxPipeline *out, OxDiagList *diags) {
  (void)file;
  bool pre_section = false;
  memset(out, 0, sizeof *out);
  Rd *r = calloc(1, sizeof *r);
  if (!r) return -1;
  size_t errors_before = diags->n_errors;
  json_object *root = ox_json_parse_root(r, text, len, 64, diags);
  if (!root) {
    free(r);
    return -1;
  }
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "a pass configuration must be a JSON object");
    goto out;
  }
  static const char *const sections[] = {"pre_grad_fusion_options", "post_grad_fusion_options"};
  json_object_object_foreach(root, key, val) {
    (void)val;
    if (strcmp(key, sections[0]) && strcmp(key, sections[1])) {
      ox_json_path_push_key(r, key);
      ERR(r, "unknown section '%.60s' (use pre_grad_fusion_options or post_grad_fusion_options)", key);
      ox_json_path_pop(r);
    }
  }
  for (int sct = 0; sct < 2; sct++) {
    json_object *sec;
    if (!json_object_object_get_ex(root, sections[sct], &sec)) continue;
    if (sct == 0) pre_section = true;
    ox_json_path_push_key(r, sections[sct]);
    if (ox_json_expect_type(r, sec, json_type_object, sections[sct])) {
      json_object_object_foreach(sec, pname, popts) {
        ox_json_path_push_key(r, pname);
        const OxPassInfo *pass = ox_pass_find(pname);
        if (!pass && sct == 1 && (!strcmp(pname, "shape_padding_multiplier") || !strcmp(pname, "pad_aten_mm_pass"))) {
          /* upstream's Optimus driver applies these names as empty pattern passes; their
           * options tune Inductor's pad_mm (matmul padding chosen by timing kernels on a GPU) */
          ox_json_report(r, OX_SEV_WARNING,
                 "%s tunes Inductor's pad_mm (matmul padding decided by GPU benchmarks), which Optimus does not run; "
                 "like PyTorch's Optimus driver it rewrites nothing here",
                 pname);
        } else if (!pass) {
          ERR(r, "unknown pass '%.60s' (see `optimus optimize --list-passes`)", pname);
        } else if ((pass->phase == OX_PHASE_POST) != (sct == 1)) {
          ERR(r, "%s is a %s-grad pass; put it under %s", pname, pass->phase == OX_PHASE_POST ? "post" : "pre",
              sections[pass->phase == OX_PHASE_POST ? 1 : 0]);
        } else if (ox_json_expect_type(r, popts, json_type_object, "the options of a pass")) {
          out->entries = realloc(out->entries, (out->n + 1) * sizeof *out->entries);
          OxPipelineEntry *e = &out->entries[out->n++];
          e->pass = pass;
          ox_pass_options_default(&e->opt);
          json_object_object_foreach(popts, ok, ov) {
            ox_json_path_push_key(r, ok);
            char val[64];
            if (json_object_is_type(ov, json_type_boolean))
              snprintf(val, sizeof val, "%s", json_object_get_boolean(ov) ? "true" : "false");
            else if (json_object_is_type(ov, json_type_int))
              snprintf(val, sizeof val, "%" PRId64, json_object_get_int64(ov));
            else if (json_object_is_type(ov, json_type_double))
              snprintf(val, sizeof val, "%.17g", json_object_get_double(ov));
            else
              snprintf(val, sizeof val, "?");
            int rc = ox_pass_option_set(&e->opt, ok, val);
            if (rc == -1) ERR(r, "unknown option '%.60s'", ok);
            if (rc == -2) ERR(r, "bad value for %.60s: %s", ok, json_object_to_json_string(ov));
            ox_json_path_pop(r);
          }
        }
        ox_json_path_pop(r);
      }
    }
    ox_json_path_pop(r);
  }
out:
  json_object_put(root);
  free(r);
  if (diags->n_errors > errors_before) {
    ox_pipeline_free(out);
    return -1;
  }
  /* upstream's pre-grad driver renames NumPy-style keywords on every graph, whatever the
   * options: a config with a pre-grad section runs numpy_compat_normalization first */
  bool has_numpy = false;
  for (uint32_t i = 0; i < out->n; i++) has_numpy |= !strcmp(out->entries[i].pass->name, "numpy_compat_normalization");
  if (pre_section && !has_numpy) {
    out->entries = realloc(out->entries, (out->n + 1) * sizeof *out->entries);
    out->entries[out->n].pass = ox_pass_find("numpy_compat_normalization");
    ox_pass_options_default(&out->entries[out->n].opt);
    out->n++;
  }
  ox_pipeline_order_like_pytorch(out); /* run as PyTorch's drivers run the file's passes */
  return 0;
}

/* ------------------------------------------------------------------ shapes files (--shapes) */

/* A dtype as a shapes file may spell it: f32, float32, torch.float32, or safetensors' F32 /
 * BF16 / I64 / BOOL. */
static OxDType shapes_dtype(const char *s) {
  size_t n = strlen(s);
  OxDType dt = ox_dtype_from_abbr(s, n);
  if (dt == OX_DT_UNKNOWN) dt = ox_dtype_from_torch_name(s, n);
  if (dt == OX_DT_UNKNOWN && n < 16) {
    char low[16];
    for (size_t i = 0; i <= n; i++) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    dt = strcmp(low, "bool") == 0 ? ox_dtype_from_abbr("b8", 2) : ox_dtype_from_abbr(low, n);
  }
  return dt;
}

/* [24, 32] (ints, or strings for symbolic dims) -> e->shape */
static bool shapes_dims(Rd *r, OxShapeList *l, json_object *arr, OxShapeEntry *e) {
  size_t n = json_object_array_length(arr);
  if (n > 64) {
    ERR(r, "a shape has %zu dims, more than 64", n);
    return false;
  }
  e->rank = (int32_t)n;
  e->shape = n ? ox_graph_alloc(l->pool, n * sizeof *e->shape) : NULL;
  for (size_t i = 0; i < n; i++) {
    json_object *d = json_object_array_get_idx(arr, i);
    ox_json_path_push_idx(r, i);
    if (json_object_is_type(d, json_type_int) && json_object_get_int64(d) >= 0) {
      e->shape[i] = (OxDim){json_object_get_int64(d), NULL};
    } else if (json_object_is_type(d, json_type_string) && json_object_get_string_len(d) > 0) {
      e->shape[i] = (OxDim){0, ox_graph_intern(l->pool, json_object_get_string(d))};
    } else if (json_object_is_type(d, json_type_int)) {
      ERR(r, "a size cannot be negative (%lld)", (long long)json_object_get_int64(d));
      ox_json_path_pop(r);
      return false;
    } else {
      ERR(r, "a size must be a non-negative integer or a symbol such as \"s0\", not %s",
          ox_json_jtype_name(d));
      ox_json_path_pop(r);
      return false;
    }
    ox_json_path_pop(r);
  }
  OxTensorMeta t = {.rank = e->rank, .shape = e->shape};
  char why[160];
  if (ox_meta_absurd(&t, why, sizeof why)) {
    ERR(r, "%s", why);
    return false;
  }
  return true;
}

int ox_shapes_read_json(const char *text, size_t len, OxShapeList *l, OxDiagList *d) {
  Rd *r = calloc(1, sizeof *r);
  if (!r) {
    ox_diag_add(d, OX_SEV_ERROR, 0, 0, NULL, "out of memory");
    return 1;
  }
  json_object *root = ox_json_parse_root(r, text, len, 64, d);
  if (!root) {
    free(r);
    return 1;
  }
  if (!json_object_is_type(root, json_type_object)) {
    ERR(r, "a shapes file is a JSON object of name: shape, not %s", ox_json_jtype_name(root));
  } else {
    json_object_object_foreach(root, key, val) {
      if (strcmp(key, "__metadata__") == 0) continue; /* safetensors' own */
      ox_json_path_push_key(r, key);
      OxShapeEntry e = {ox_graph_intern(l->pool, key), OX_DT_UNKNOWN, -1, NULL};
      bool ok = false;
      if (json_object_is_type(val, json_type_array)) {
        ok = shapes_dims(r, l, val, &e);
      } else if (json_object_is_type(val, json_type_string)) {
        OxMeta m;
        const char *s = json_object_get_string(val);
        if (!ox_parse_tensor_annotation(l->pool, s, strlen(s), &m) || m.kind != OX_META_TENSOR) {
          ERR(r, "'%.80s' is not a tensor annotation such as \"f32[24, 32]\"", s);
        } else {
          e.dtype = m.t[0].dtype;
          e.rank = m.t[0].rank;
          e.shape = m.t[0].shape;
          ok = true;
        }
      } else if (json_object_is_type(val, json_type_object)) {
        json_object *dt = NULL, *sh = NULL;
        json_object_object_get_ex(val, "dtype", &dt);
        json_object_object_get_ex(val, "shape", &sh);
        if (!sh || !json_object_is_type(sh, json_type_array)) {
          ERR(r, "an entry object needs \"shape\": [sizes]");
        } else if (dt && !json_object_is_type(dt, json_type_string)) {
          ox_json_path_push_key(r, "dtype");
          ERR(r, "dtype must be a string such as \"f32\", not %s", ox_json_jtype_name(dt));
          ox_json_path_pop(r);
        } else if (dt && (e.dtype = shapes_dtype(json_object_get_string(dt))) == OX_DT_UNKNOWN) {
          ox_json_path_push_key(r, "dtype");
          ERR(r, "unknown dtype '%.40s' (f32, f16, bf16, i64, float32, torch.float32, F32 ...)",
              json_object_get_string(dt));
          ox_json_path_pop(r);
        } else {
          ox_json_path_push_key(r, "shape");
          ok = shapes_dims(r, l, sh, &e);
          ox_json_path_pop(r);
        }
      } else {
        ERR(r, "a shape is [sizes], \"f32[sizes]\" or {\"dtype\": ..., \"shape\": [sizes]}, not %s",
            ox_json_jtype_name(val));
      }
      ox_json_path_pop(r);
      if (!ok) continue;
      if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = ox_xrealloc(l->items, l->cap * sizeof *l->items);
      }
      l->items[l->n++] = e;
    }
  }
  json_object_put(root);
  int errors = (int)r->errors;
  free(r);
  return errors;
}
