/* ox_graph_diff.c - two graphs matched node by node, by name then by structure, and their
 * differences grouped into connected regions (ox_graph_diff.h).
 *
 * A node's signature is its op, target, args and kwargs serialised with every node reference
 * written as the A-side id it stands for: in A the referenced node's own id, in B the id of its
 * A match (or a B-only marker that never equals an A signature). Two nodes with equal signatures
 * are structurally the same. The unmatched nodes of A are sorted by signature once; each
 * unmatched node of B, in B's order, takes the first unused A node with its signature.
 */
#include "ir/ox_graph_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"

/* ------------------------------------------------------------------ signatures */

static void put_value(OxBuf *b, const OxValue *v, const OxNodeId *map, bool is_b) {
  switch ((OxValueKind)v->kind) {
  case OX_V_NONE: ox_buf_puts(b, "N"); break;
  case OX_V_BOOL: ox_buf_puts(b, v->u.b ? "T" : "F"); break;
  case OX_V_INT: ox_buf_printf(b, "i%lld", (long long)v->u.i); break;
  case OX_V_FLOAT: ox_buf_printf(b, "f%.17g", v->u.f); break;
  case OX_V_NODE:
    if (!is_b)
      ox_buf_printf(b, "@%u", v->u.node);
    else if (map[v->u.node])
      ox_buf_printf(b, "@%u", map[v->u.node]);
    else
      ox_buf_printf(b, "@b%u", v->u.node); /* unmatched in B: equal to no A signature */
    break;
  case OX_V_DTYPE: ox_buf_printf(b, "d%d:%s", (int)v->u.dtype, v->s ? v->s : ""); break;
  case OX_V_ELLIPSIS: ox_buf_puts(b, "E"); break;
  case OX_V_LIST:
  case OX_V_TUPLE:
  case OX_V_SLICE:
  case OX_V_DICT:
    ox_buf_printf(b, "%c%u(", "LTDS"[v->kind == OX_V_LIST ? 0 : v->kind == OX_V_TUPLE ? 1 : v->kind == OX_V_DICT ? 2 : 3],
                  v->n);
    for (uint32_t i = 0; i < v->n; i++) {
      if (v->kind == OX_V_DICT) ox_buf_printf(b, "%zu:%s=", strlen(v->keys[i]), v->keys[i]);
      put_value(b, &v->u.items[i], map, is_b);
      ox_buf_putc(b, ',');
    }
    ox_buf_putc(b, ')');
    break;
  default: /* STR, SYM, DEVICE, ENUM, RAW: kind and text */
    ox_buf_printf(b, "s%d:%zu:%s", v->kind, v->s ? strlen(v->s) : 0, v->s ? v->s : "");
    break;
  }
}

/* The parts of a signature, each closed by a separator; fields[i] ends where part i ends. */
static char *signature(const OxGraph *g, OxNodeId id, const OxNodeId *map, bool is_b, size_t ends[4]) {
  const OxNode *n = &g->nodes[id];
  OxBuf b;
  ox_buf_init(&b);
  ox_buf_printf(&b, "%d\x1f", n->op);
  ends[0] = b.len;
  ox_buf_printf(&b, "%s\x1f", n->target ? n->target : "");
  ends[1] = b.len;
  put_value(&b, &n->args, map, is_b);
  ox_buf_putc(&b, 0x1f);
  ends[2] = b.len;
  put_value(&b, &n->kwargs, map, is_b);
  ends[3] = b.len;
  ox_buf_putc(&b, 0);
  return b.data;
}

typedef struct Sig {
  char *s;
  OxNodeId id;
} Sig;

static int cmp_sig(const void *x, const void *y) {
  const Sig *a = x, *b = y;
  int c = strcmp(a->s, b->s);
  return c ? c : (a->id > b->id) - (a->id < b->id);
}

/* ------------------------------------------------------------------ regions (union-find) */

static uint32_t uf_find(uint32_t *p, uint32_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

static void uf_union(uint32_t *p, uint32_t x, uint32_t y) {
  x = uf_find(p, x);
  y = uf_find(p, y);
  if (x != y) p[x > y ? x : y] = x < y ? x : y; /* the smaller index is the root */
}

typedef struct Link {
  uint32_t *parent;
  uint32_t self, offset;
  const uint8_t *state;
} Link;

static void link_input(OxNodeId in, void *data) {
  Link *l = data;
  if (l->state[in] != OX_DIFF_SAME) uf_union(l->parent, l->self, l->offset + in);
}

static bool differs(uint8_t s) { return s != OX_DIFF_SAME; }

/* ------------------------------------------------------------------ the diff */

void ox_graph_diff(const OxGraph *a, const OxGraph *b, OxGraphDiff *d) {
  memset(d, 0, sizeof *d);
  d->na = a->n_nodes;
  d->nb = b->n_nodes;
  d->a_to_b = ox_xcalloc(d->na + 1, sizeof *d->a_to_b);
  d->b_to_a = ox_xcalloc(d->nb + 1, sizeof *d->b_to_a);
  d->a_state = ox_xcalloc(d->na + 1, 1);
  d->b_state = ox_xcalloc(d->nb + 1, 1);
  d->a_how = ox_xcalloc(d->na + 1, 1);
  d->a_fields = ox_xcalloc(d->na + 1, 1);
  d->a_region = ox_xcalloc(d->na + 1, sizeof *d->a_region);
  d->b_region = ox_xcalloc(d->nb + 1, sizeof *d->b_region);
  /* 1. by name */
  OX_GRAPH_FOREACH(b, id) {
    OxNodeId x = ox_graph_find(a, b->nodes[id].name);
    if (!x || d->a_to_b[x]) continue;
    d->a_to_b[x] = id;
    d->b_to_a[id] = x;
    d->a_how[x] = OX_DIFF_BY_NAME;
    d->n_by_name++;
  }
  /* 2. by structure: the unmatched nodes of A sorted by signature */
  uint32_t n_un = 0;
  OX_GRAPH_FOREACH(a, id) n_un += !d->a_to_b[id];
  Sig *sa = ox_xcalloc(n_un + 1, sizeof *sa);
  bool *taken = ox_xcalloc(n_un + 1, sizeof *taken);
  uint32_t k = 0;
  size_t ends[4];
  OX_GRAPH_FOREACH(a, id) if (!d->a_to_b[id]) sa[k++] = (Sig){signature(a, id, NULL, false, ends), id};
  qsort(sa, n_un, sizeof *sa, cmp_sig);
  for (int round = 0; round < 4 && n_un; round++) {
    uint32_t found = 0;
    OX_GRAPH_FOREACH(b, id) {
      if (d->b_to_a[id]) continue;
      char *s = signature(b, id, d->b_to_a, true, ends);
      uint32_t lo = 0, hi = n_un; /* the first signature >= s */
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (strcmp(sa[mid].s, s) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (; lo < n_un && strcmp(sa[lo].s, s) == 0; lo++) {
        if (taken[lo]) continue;
        taken[lo] = true;
        d->a_to_b[sa[lo].id] = id;
        d->b_to_a[id] = sa[lo].id;
        d->a_how[sa[lo].id] = OX_DIFF_BY_STRUCTURE;
        d->n_by_structure++;
        found++;
        break;
      }
      free(s);
    }
    if (!found) break; /* a later round only helps when this one matched something */
  }
  for (uint32_t i = 0; i < n_un; i++) free(sa[i].s);
  free(sa);
  free(taken);
  /* 3. states: changed pairs (by name only: a structural match has an equal signature) */
  OX_GRAPH_FOREACH(a, id) {
    OxNodeId y = d->a_to_b[id];
    if (!y) {
      d->a_state[id] = OX_DIFF_REMOVED;
      d->n_removed++;
      continue;
    }
    size_t ea[4], eb[4];
    char *s1 = signature(a, id, NULL, false, ea), *s2 = signature(b, y, d->b_to_a, true, eb);
    uint8_t f = 0;
    size_t pa = 0, pb = 0;
    for (int part = 0; part < 4; part++) {
      if (ea[part] - pa != eb[part] - pb || memcmp(s1 + pa, s2 + pb, ea[part] - pa) != 0) f |= (uint8_t)(1u << part);
      pa = ea[part];
      pb = eb[part];
    }
    free(s1);
    free(s2);
    d->a_fields[id] = f;
    d->a_state[id] = d->b_state[y] = f ? OX_DIFF_CHANGED : OX_DIFF_SAME;
    if (f)
      d->n_changed++;
    else
      d->n_same++;
  }
  OX_GRAPH_FOREACH(b, id) if (!d->b_to_a[id]) {
    d->b_state[id] = OX_DIFF_ADDED;
    d->n_added++;
  }
  /* 4. regions */
  uint32_t total = d->na + d->nb;
  uint32_t *parent = ox_xcalloc(total + 1, sizeof *parent);
  for (uint32_t i = 0; i < total; i++) parent[i] = i;
  OX_GRAPH_FOREACH(a, id) if (differs(d->a_state[id])) {
    Link l = {parent, id, 0, d->a_state};
    ox_value_foreach_node(&a->nodes[id].args, link_input, &l);
    ox_value_foreach_node(&a->nodes[id].kwargs, link_input, &l);
    if (d->a_to_b[id]) uf_union(parent, id, d->na + d->a_to_b[id]);
  }
  OX_GRAPH_FOREACH(b, id) if (differs(d->b_state[id])) {
    Link l = {parent, d->na + id, d->na, d->b_state};
    ox_value_foreach_node(&b->nodes[id].args, link_input, &l);
    ox_value_foreach_node(&b->nodes[id].kwargs, link_input, &l);
  }
  /* number the roots in order of first appearance: A's order, then B's */
  uint32_t *num = ox_xcalloc(total + 1, sizeof *num);
  for (uint32_t i = 0; i < total; i++) num[i] = OX_DIFF_NO_REGION;
  for (uint32_t i = 0; i < d->na; i++) d->a_region[i] = OX_DIFF_NO_REGION;
  for (uint32_t i = 0; i < d->nb; i++) d->b_region[i] = OX_DIFF_NO_REGION;
  OX_GRAPH_FOREACH(a, id) if (differs(d->a_state[id])) {
    uint32_t r = uf_find(parent, id);
    if (num[r] == OX_DIFF_NO_REGION) num[r] = d->n_regions++;
    d->a_region[id] = num[r];
  }
  OX_GRAPH_FOREACH(b, id) if (differs(d->b_state[id])) {
    uint32_t r = uf_find(parent, d->na + id);
    if (num[r] == OX_DIFF_NO_REGION) num[r] = d->n_regions++;
    d->b_region[id] = num[r];
  }
  free(num);
  free(parent);
}

void ox_graph_diff_free(OxGraphDiff *d) {
  if (!d) return;
  free(d->a_to_b);
  free(d->b_to_a);
  free(d->a_state);
  free(d->b_state);
  free(d->a_how);
  free(d->a_fields);
  free(d->a_region);
  free(d->b_region);
  memset(d, 0, sizeof *d);
}
