/* ox-window-panels.c - the main window's right-hand panels (ox-window-private.h): the node
 * inspector, "why not?" (the rejected records at a node and what would make them fire), the
 * checks of the current step, and the run's passes (coverage: tried, applied, refused and why,
 * each entry a filter of the timeline). Each panel is markup rebuilt from the document's current frame;
 * ox_window_update_panels skips the labels whose text did not change.
 */
#include "ox-window-private.h"

#include <string.h>

#include "write/ox_write.h"

/* ------------------------------------------------------------------ panels */

static void panel_node(OxWindow *self, GString *s) {
  OxHistory *h = ox_document_get_history(self->doc);
  const char *sel = ox_document_get_selected(self->doc);
  if (!h || !sel) {
    g_string_append(s, "<i>Click a node to inspect it.</i>");
    return;
  }
  OxGraph *g = ox_document_get_graph(self->doc);
  OxNodeId id = ox_graph_find(g, sel);
  guint k = ox_document_get_shown_gstep(self->doc);
  guint32 uid = ox_document_uid_of(self->doc, sel);
  if (!uid) {
    /* not alive here: the newest identity with this name */
    guint32 e = ox_history_named(h, sel);
    if (e) uid = h->named[e].uid;
  }
  const OxNode *n = id ? &g->nodes[id] : (uid ? &h->u->nodes[uid] : NULL);
  char *m = g_markup_printf_escaped("<big><b>%s</b></big>\n", sel);
  g_string_append(s, m);
  g_free(m);
  if (!n) return;
  if (!id) g_string_append(s, "<span foreground=\"#c01c28\">not in the graph at this step</span>\n");
  m = g_markup_printf_escaped("<b>op</b> %s   <b>family</b> %s\n<b>target</b> <tt>%s</tt>\n", ox_op_name((OxOp)n->op),
                              ox_family_name(ox_node_family(id ? g : h->u, n)), n->target);
  g_string_append(s, m);
  g_free(m);
  /* a lowered module / submodule whose graph the dump carries: open it */
  guint sub = ox_document_find_subgraph_entry(self->doc, n->target);
  if (sub == G_MAXUINT) sub = ox_document_find_subgraph_entry(self->doc, n->name);
  if (sub == G_MAXUINT && id && n->args.n && n->args.u.items[0].kind == OX_V_NODE) {
    const OxNode *a0 = ox_graph_node(g, n->args.u.items[0].u.node);
    if (a0) sub = ox_document_find_subgraph_entry(self->doc, a0->target);
  }
  if (sub != G_MAXUINT) {
    const OxGraphEntry *e = ox_document_get_graph_entry(self->doc, sub);
    m = g_markup_printf_escaped("<b>graph</b> <a href=\"graph:%u\">%s</a>\n", sub, e->label);
    g_string_append(s, m);
    g_free(m);
  }
  if (id) {
    OxBuf b;
    ox_buf_init(&b);
    ox_write_fx_value(g, &n->args, &b);
    g_string_append(s, "<b>args</b> <tt>");
    ox_window_append_linked(s, b.data ? b.data : "()", g);
    g_string_append(s, "</tt>\n");
    b.len = 0;
    ox_write_fx_value(g, &n->kwargs, &b);
    g_string_append(s, "<b>kwargs</b> <tt>");
    ox_window_append_linked(s, b.data ? b.data : "{}", g);
    g_string_append(s, "</tt>\n");
    ox_buf_free(&b);
  }
  if (n->meta.kind == OX_META_TENSOR || n->meta.kind == OX_META_TUPLE) {
    for (guint32 i = 0; i < n->meta.n; i++) {
      char buf[256];
      const OxTensorMeta *t = &n->meta.t[i];
      char shape[200];
      OxTensorMeta t2 = *t;
      t2.has_stride = false;
      t2.device = NULL;
      ox_tensor_meta_format(&t2, false, false, shape, sizeof shape);
      g_snprintf(buf, sizeof buf, "%s", shape);
      GString *line = g_string_new(NULL);
      g_string_append_printf(line, "<b>meta%s</b> dtype %s, shape <tt>", n->meta.n > 1 ? "" : "",
                             ox_dtype_abbr(t->dtype));
      char *e = g_markup_escape_text(buf, -1);
      g_string_append(line, e);
      g_free(e);
      g_string_append(line, "</tt>");
      if (t->has_stride) {
        char full[256];
        ox_tensor_meta_format(t, true, false, full, sizeof full);
        const char *st = strchr(full, ']');
        e = g_markup_escape_text(st ? st + 1 : "", -1);
        g_string_append_printf(line, ", stride <tt>%s</tt>", e);
        g_free(e);
      }
      if (t->device) {
        e = g_markup_escape_text(t->device, -1);
        g_string_append_printf(line, ", device %s", e);
        g_free(e);
      }
      g_string_append(s, line->str);
      g_string_append_c(s, '\n');
      g_string_free(line, TRUE);
    }
  } else if (n->meta.kind == OX_META_SYMINT) {
    m = g_markup_printf_escaped("<b>meta</b> SymInt %s\n", n->meta.sym ? n->meta.sym : "");
    g_string_append(s, m);
    g_free(m);
  } else {
    g_string_append(s, "<b>meta</b> <i>unknown</i>\n");
  }
  if (id) {
    g_string_append_printf(s, "<b>users</b> (%u) ", n->n_users);
    for (guint32 i = 0; i < n->n_users; i++) {
      if (i) g_string_append(s, ", ");
      ox_window_append_node_link(s, g->nodes[n->users[i]].name);
    }
    g_string_append_c(s, '\n');
    /* lineage: a search for what it depends on / what depends on it, highlighted and walked
     * with Ctrl+G */
    m = g_markup_printf_escaped("<b>lineage</b> <a href=\"search:up:%s\">upstream</a> · "
                                "<a href=\"search:down:%s\">downstream</a> · "
                                "<a href=\"search:near:%s:2\">within 2 hops</a>\n",
                                n->name, n->name, n->name);
    g_string_append(s, m);
    g_free(m);
  }
  if (n->module_path) {
    m = g_markup_printf_escaped("<b>module</b> <tt>%s</tt>%s%s\n", n->module_path, n->module_type ? " " : "",
                                n->module_type ? n->module_type : "");
    g_string_append(s, m);
    g_free(m);
  }
  /* provenance and lifetime */
  if (uid) {
    g_string_append(s, "\n<b>history</b> ");
    if (h->born[uid] == 0)
      g_string_append(s, "in the input graph");
    else {
      g_string_append(s, "created by ");
      ox_window_append_step_link(s, h->seq_of_gstep[h->born[uid]] + 1);
    }
    if (h->died[uid] != OX_HISTORY_NEVER) {
      g_string_append(s, ", removed by ");
      ox_window_append_step_link(s, h->seq_of_gstep[h->died[uid]] + 1);
    }
    g_string_append_c(s, '\n');
  }
  (void)k;
  if (id && n->n_provenance) {
    g_string_append(s, "<b>comes from</b> ");
    for (guint32 i = 0; i < n->n_provenance; i++) {
      const OxNode *o = ox_graph_node(h->input, n->provenance[i]);
      if (i) g_string_append(s, ", ");
      if (o) ox_window_append_node_link(s, o->name);
    }
    g_string_append_c(s, '\n');
  }
  if (n->stack_trace) {
    m = g_markup_printf_escaped("\n<b>stack trace</b>\n<tt><small>%s</small></tt>\n", n->stack_trace);
    g_string_append(s, m);
    g_free(m);
  }
}

const char *ox_window_kind_color(guint8 kind) {
  return kind == OX_STEP_APPLIED ? "#26a269" : kind == OX_STEP_REJECTED ? "#9a9996" : "#c01c28";
}

/* The rule file and line of a user rule's step ("my.rules:12"), or NULL. */
static char *rule_location(const OxStep *st) {
  if (!st->rule_file) return NULL;
  char *base = g_path_get_basename(st->rule_file);
  char *r = st->rule_line ? g_strdup_printf("%s:%u", base, st->rule_line) : g_strdup(base);
  g_free(base);
  return r;
}

/* One record: "● #4 batch_linear / batch_linear  rejected: set of 3 < min_fuse_set_size 5". */
static void append_step_title(GString *s, const OxStep *st) {
  char *m = g_markup_printf_escaped("<span foreground=\"%s\">●</span> ", ox_window_kind_color(st->kind));
  g_string_append(s, m);
  g_free(m);
  ox_window_append_step_link(s, st->seq + 1);
  gboolean rule = st->rule && strcmp(st->rule, st->pass) != 0;
  m = g_markup_printf_escaped(" <b>%s</b>%s%s", st->pass, rule ? " / " : "", rule ? st->rule : "");
  g_string_append(s, m);
  g_free(m);
  char *loc = rule_location(st);
  if (loc) {
    m = g_markup_printf_escaped(" <small>(rule at <tt>%s</tt>)</small>", loc);
    g_string_append(s, m);
    g_free(m);
    g_free(loc);
  }
  if (st->kind == OX_STEP_APPLIED) {
    g_string_append_printf(s, "  applied: −%u +%u nodes", st->n_removed, st->n_added);
  } else {
    char *why = ox_reason_format(&st->reason);
    /* the guard that failed, its values, and its code (docs/trace-format.md) */
    m = g_markup_printf_escaped("  %s: %s <small>[%s]</small>", st->kind == OX_STEP_REJECTED ? "rejected" : "check failed",
                                why ? why : "", ox_reason_code_name((OxReasonCode)st->reason.code));
    g_string_append(s, m);
    g_free(m);
    free(why);
  }
  g_string_append_c(s, '\n');
}

/* Anchor and candidates (matched nodes) of a record, the selected node marked. */
static void append_step_nodes(GString *s, const OxStep *st, const char *sel) {
  if (st->anchor) {
    g_string_append(s, "    anchor ");
    ox_window_append_node_link(s, st->anchor);
    if (sel && !strcmp(sel, st->anchor)) g_string_append(s, " <i>(this node)</i>");
  }
  if (st->n_matched) {
    gboolean in = FALSE;
    for (guint i = 0; sel && i < st->n_matched && !in; i++) in = !strcmp(st->matched[i], sel);
    g_string_append_printf(s, "%s%u %s%s: ", st->anchor ? " · " : "    ", st->n_matched,
                           st->kind == OX_STEP_APPLIED ? "matched" : st->n_matched == 1 ? "candidate" : "candidates",
                           in ? " <i>(this node among them)</i>" : "");
    ox_window_append_node_links(s, st->matched, st->n_matched, 12);
  }
  if (st->anchor || st->n_matched) g_string_append_c(s, '\n');
  /* other nodes the reason names */
  gboolean any = FALSE;
  for (guint i = 0; i < st->reason.n_args; i++) {
    const char *nm = st->reason.nodes[i];
    if (!nm || (st->anchor && !strcmp(nm, st->anchor))) continue;
    g_string_append(s, any ? " " : "    named in the reason: ");
    ox_window_append_node_link(s, nm);
    any = TRUE;
  }
  if (any) g_string_append_c(s, '\n');
}

static void append_step_summary(GString *s, const OxStep *st) {
  append_step_title(s, st);
  append_step_nodes(s, st, NULL);
}

/* The alternative's own record of s's pass and anchor (what the re-run said instead), or NULL. */
static const OxStep *alt_record(const OxWhatifResult *r, const OxStep *s) {
  for (guint i = 0; r->trace && i < r->trace->n_steps; i++) {
    const OxStep *a = &r->trace->steps[i];
    if (!g_strcmp0(a->pass, s->pass) && !g_strcmp0(a->anchor, s->anchor)) return a;
  }
  return NULL;
}

/* The "what would make it fire" of a rejected record: each option its reason suggests, checked by
 * a what-if re-run in the background (ox_document_get_whatif); only a re-run that applies the
 * group is offered as a hint. Returns how many re-runs it asked for (pending). */
static guint append_hint(OxWindow *self, GString *s, const OxStep *st, const OxPipeline *p, gboolean start) {
  if (st->kind != OX_STEP_REJECTED) return 0;
  char c[4][OX_WHATIF_OPTION_MAX];
  guint n = ox_whatif_candidates(p, st, c, 4);
  if (!n) {
    g_string_append(s, "    <i>no option controls this guard</i>\n");
    return 0;
  }
  guint pending = 0, helped = 0, refuted = 0;
  for (guint i = 0; i < n; i++) {
    const char *err = NULL;
    const OxWhatifResult *r = ox_document_get_whatif(self->doc, c[i], start, &err);
    char *m;
    if (err) {
      m = g_markup_printf_escaped("    <i>could not check <tt>--option %s</tt>: %s</i>\n", c[i], err);
      g_string_append(s, m);
      g_free(m);
      continue;
    }
    if (!r && !start) {
      /* a large graph: a re-run costs seconds, so it runs when asked */
      m = g_markup_printf_escaped("    <tt>--option %s</tt> might make it fire: <a href=\"whatif:%s\">check by a re-run</a>\n",
                                  c[i], c[i]);
      g_string_append(s, m);
      g_free(m);
      continue;
    }
    if (!r) {
      m = g_markup_printf_escaped("    <i>checking <tt>--option %s</tt> by a re-run…</i>\n", c[i]);
      g_string_append(s, m);
      g_free(m);
      pending++;
      continue;
    }
    guint32 at = ox_whatif_fires(r, st);
    if (at != OX_WHATIF_NONE) {
      const OxStep *a = &r->trace->steps[at];
      helped++;
      m = g_markup_printf_escaped("    <span foreground=\"#26a269\">✔</span> <b>with <tt>--option %s</tt> this %s</b>\n"
                                  "      checked by a re-run: %s applies at <tt>%s</tt> (−%u +%u nodes); in all %u "
                                  "more and %u fewer rewrites, %u → %u nodes · ",
                                  c[i], st->n_matched > 1 ? "group would fuse" : "would fire", a->pass,
                                  a->anchor ? a->anchor : "?", a->n_removed, a->n_added, r->n_newly_applied,
                                  r->n_newly_rejected, r->base_nodes, r->alt_nodes);
      g_string_append(s, m);
      g_free(m);
      m = g_markup_printf_escaped("<a href=\"rerun:%s\">re-run with this option</a>\n", c[i]);
      g_string_append(s, m);
      g_free(m);
    } else {
      refuted++;
      const OxStep *a = alt_record(r, st);
      char *why = a && a->kind != OX_STEP_APPLIED ? ox_reason_format(&a->reason) : NULL;
      m = g_markup_printf_escaped("    <span foreground=\"#9a9996\">✘</span> <tt>--option %s</tt> does not make it "
                                  "fire\n      checked by a re-run: %s%s\n",
                                  c[i], why ? "rejected again: " : "the group is not rewritten", why ? why : "");
      g_string_append(s, m);
      g_free(m);
      free(why);
    }
  }
  if (!pending && !helped && refuted)
    g_string_append(s, "    <i>no option change makes this fire</i>\n");
  return pending;
}

static const OxCoverage *coverage(OxWindow *self);

/* For a refusal: how many records of its pass and rule were refused the same way (same reason
 * code and, when the code has one, the same deciding value), as a link that filters the timeline
 * to them (the Passes panel's entry). Nothing when it is the only one. */
static void append_like_it(OxWindow *self, GString *s, const OxStep *st) {
  const OxCoverage *c = coverage(self);
  const OxCoverageRow *r = ox_coverage_find_row(c, st->phase ? st->phase : "pre", st->pass, st->rule);
  const OxCoverageReason *x = ox_coverage_find_reason(r, st->reason.code);
  if (!x) return;
  guint i = (guint)(r - c->rows), j = (guint)(x - r->reasons);
  char d[320];
  if (ox_coverage_detail_of(st, d, sizeof d))
    for (guint32 k = 0; k < x->n_details; k++)
      if (!strcmp(x->details[k].text, d)) {
        if (x->details[k].count > 1) {
          char *m = g_markup_printf_escaped("    <a href=\"cov:%u:%u:%u\">%u refused like this</a> (%s)\n", i, j, k,
                                            x->details[k].count, d);
          g_string_append(s, m);
          g_free(m);
        }
        return;
      }
  if (x->count > 1)
    g_string_append_printf(s, "    <a href=\"cov:%u:%u\">%u refused for %s</a> in this pass\n", i, j, x->count,
                           ox_reason_code_name((OxReasonCode)x->code));
}

static void panel_why(OxWindow *self, GString *s) {
  const char *sel = ox_document_get_selected(self->doc);
  const OxTrace *t = ox_document_get_trace(self->doc);
  if (!sel) {
    g_string_append(s, "<i>Select a node to see every pass that considered it, and why it did or did not fire.</i>");
    return;
  }
  char *m = g_markup_printf_escaped("<big><b>Why not? — %s</b></big>\n", sel);
  g_string_append(s, m);
  g_free(m);
  if (!t) {
    g_string_append(s, "<i>No trace yet.</i>");
    return;
  }
  GArray *a = ox_document_explain(self->doc, sel);
  guint counts[3] = {0, 0, 0};
  for (guint i = 0; i < a->len; i++) counts[MIN(t->steps[g_array_index(a, guint, i) - 1].kind, 2)]++;
  if (!a->len)
    g_string_append(s, "No pass recorded anything about this node: no pattern anchored on it or matched it.\n");
  else
    g_string_append_printf(s, "%u record%s mention it (%u applied, %u rejected, %u check failed):\n\n", a->len,
                           a->len == 1 ? "" : "s", counts[0], counts[1], counts[2]);
  OxPipeline p;
  OxCheckConfig checks;
  char *why = NULL;
  gboolean can_rerun = ox_document_whatif_pipeline(self->doc, &p, &checks, &why);
  guint hinted = 0;
  /* the re-runs this panel asks for replace those the previous node asked for and did not get */
  ox_document_whatif_drop_queued(self->doc);
  const OxHistory *hist = ox_document_get_history(self->doc);
  gboolean automatic = hist && hist->input->n_live <= self->hint_auto_max;
  for (guint i = 0; i < a->len && i < 400; i++) {
    const OxStep *st = &t->steps[g_array_index(a, guint, i) - 1];
    append_step_title(s, st);
    append_step_nodes(s, st, sel);
    if (st->kind != OX_STEP_APPLIED) append_like_it(self, s, st);
    if (st->kind == OX_STEP_REJECTED) {
      if (!can_rerun) {
        m = g_markup_printf_escaped("    <i>hints need a re-run: %s</i>\n", why ? why : "");
        g_string_append(s, m);
        g_free(m);
      } else {
        /* re-runs are asked for the first records only; the rest say so until these are done */
        append_hint(self, s, st, &p, automatic && hinted < 16);
        hinted++;
      }
    }
    g_string_append_c(s, '\n');
  }
  if (a->len > 400) g_string_append_printf(s, "<i>… and %u more records</i>\n", a->len - 400);
  if (can_rerun) ox_pipeline_free(&p);
  g_free(why);
  g_array_free(a, TRUE);
}

static void panel_checks(OxWindow *self, GString *s) {
  const OxStep *st = ox_document_get_step(self->doc);
  if (!st) {
    g_string_append(s, "<i>Step to a record (n / Right) to see its semantic checks.</i>");
    return;
  }
  append_step_summary(s, st);
  char *loc = rule_location(st);
  if (loc) {
    char *m = g_markup_printf_escaped("    rule <b>%s</b> written at <tt>%s</tt>\n", st->rule ? st->rule : st->pass, loc);
    g_string_append(s, m);
    g_free(m);
    g_free(loc);
  }
  if (st->cost.set) {
    /* the estimate of what the step removes and adds (docs/cost-model.md) */
    char cb[256];
    ox_cost_format_pair(&st->cost, cb, sizeof cb);
    char *m = g_markup_printf_escaped("<b>estimated cost</b>  %s\n", cb);
    g_string_append(s, m);
    g_free(m);
  }
  g_string_append_c(s, '\n');
  if (st->kind == OX_STEP_REJECTED) {
    g_string_append(s, "<i>Rejected before rewriting: no checks ran.</i>\n");
    return;
  }
  static const char *const status_color[] = {"#77767b", "#26a269", "#c01c28", "#c64600"};
  for (int k = 0; k < OX_CHECK_KINDS; k++) {
    const OxCheckResult *r = &st->checks[k];
    guint stt = MIN(r->status, 3u);
    char *m = g_markup_printf_escaped("<b>%s</b>  <span foreground=\"%s\"><b>%s</b></span>", ox_check_kind_name((OxCheckKind)k),
                                      status_color[stt], ox_check_status_name((OxCheckStatus)r->status));
    g_string_append(s, m);
    g_free(m);
    if (r->seconds > 0) g_string_append_printf(s, "  <small>%.2f ms</small>", r->seconds * 1000);
    g_string_append_c(s, '\n');
    if (k == OX_CHECK_NUMERIC && (r->status == OX_CHECK_PASSED || r->status == OX_CHECK_FAILED))
      g_string_append_printf(s, "    max abs error %.3g, max rel error %.3g, tolerance %.3g, %u trials\n", r->max_abs,
                             r->max_rel, r->tol, r->trials);
    if (r->checked_shape) {
      m = g_markup_printf_escaped("    %s\n", r->checked_shape);
      g_string_append(s, m);
      g_free(m);
    }
    if (r->detail && *r->detail) {
      m = g_markup_printf_escaped("    %s\n", r->detail);
      g_string_append(s, m);
      g_free(m);
    }
  }
}

/* ---- Passes: the run's coverage (ox_coverage.h), a drill-down into the timeline */

static const OxCoverage *coverage(OxWindow *self) {
  const OxTrace *t = ox_document_get_trace(self->doc);
  if (!t) return NULL;
  if (self->coverage && self->coverage->n_steps != t->n_steps) ox_window_coverage_forget(self); /* it grew */
  if (!self->coverage) self->coverage = ox_coverage_of(t); /* ~2.4 ms for 17k records */
  return self->coverage;
}

void ox_window_coverage_forget(OxWindow *self) {
  g_clear_pointer(&self->coverage, ox_coverage_free);
  g_clear_pointer(&self->cmp_coverage, ox_coverage_free);
}

/* The coverage of the run Compare with Trace put beside this one, once it is compared; NULL
 * otherwise. Made when first needed, again when that trace changes. */
static const OxCoverage *coverage_b(OxWindow *self) {
  const OxTrace *t = self->cmp_doc && self->cmp_ready ? ox_document_get_trace(self->cmp_doc) : NULL;
  if (self->cmp_coverage && (!t || self->cmp_cov_trace != t || self->cmp_coverage->n_steps != t->n_steps))
    g_clear_pointer(&self->cmp_coverage, ox_coverage_free);
  if (t && !self->cmp_coverage) {
    self->cmp_coverage = ox_coverage_of(t);
    self->cmp_cov_trace = t;
  }
  return self->cmp_coverage;
}

/* " → 7" after a count when this run is compared with another and its count differs */
static void then_b(GString *s, const OxCoverage *cb, guint a, guint b) {
  if (cb && a != b) g_string_append_printf(s, " → <b>%u</b>", b);
}

static void passes_b_only(GString *s, const OxCoverage *c, const OxCoverage *cb) {
  gboolean title = FALSE;
  for (guint32 i = 0; i < cb->n_rows; i++) {
    const OxCoverageRow *r = &cb->rows[i];
    if (ox_coverage_find_row(c, r->phase, r->pass, r->rule)) continue;
    if (!title) g_string_append(s, "\n<b>only in the other run</b>\n");
    title = TRUE;
    char title[512];
    char *m = g_markup_printf_escaped("%s: %u tried, %u applied, %u rejected\n",
                                      ox_coverage_row_title(r->phase, r->pass, r->rule, title, sizeof title), r->attempts,
                                      r->applied, r->rejected);
    g_string_append(s, m);
    g_free(m);
  }
}

static void panel_passes(OxWindow *self, GString *s) {
  const OxTrace *t = ox_document_get_trace(self->doc);
  const OxCoverage *c = coverage(self);
  if (!t || !c || !c->n_rows) {
    g_string_append(s, "<i>No steps recorded: run or open an optimization to see what each pass tried.</i>");
    return;
  }
  const OxCoverage *cb = coverage_b(self);
  g_string_append_printf(s, "<b>%u records</b> · %u applied · %u rejected · %u check failed\n", t->n_steps,
                         t->n_applied, t->n_rejected, t->n_check_failed);
  if (cb) {
    char *base = g_path_get_basename(self->cmp_trace_path ? self->cmp_trace_path : "");
    char *m = g_markup_printf_escaped("beside <b>%s</b>: <b>→ N</b> is its count where it differs\n", base);
    g_string_append(s, m);
    g_free(m);
    g_free(base);
  }
  const char *active = ox_document_get_filter_coverage(self->doc);
  if (active) {
    char *m = g_markup_printf_escaped("timeline: <b>%s</b> · <a href=\"cov:\">show all</a>\n", active);
    g_string_append(s, m);
    g_free(m);
  } else {
    g_string_append(s, "<small>Click a pass, a reason or a value to step through those records only.</small>\n");
  }
  guint pos = ox_document_get_position(self->doc);
  const OxStep *cur = pos ? &t->steps[pos - 1] : NULL;
  const OxCoverageRow *cur_row = cur ? ox_coverage_find_row(c, cur->phase ? cur->phase : "pre", cur->pass, cur->rule) : NULL;
  for (guint32 i = 0; i < c->n_rows; i++) {
    const OxCoverageRow *r = &c->rows[i];
    const OxCoverageRow *rb = cb ? ox_coverage_find_row(cb, r->phase, r->pass, r->rule) : NULL;
    gboolean here = r == cur_row;
    char *m = g_markup_printf_escaped("\n%s<a href=\"cov:%u\"><b>%s</b></a> (%s)%s%s\n", here ? "▶ " : "", i, r->pass,
                                      r->phase, r->rule && strcmp(r->rule, r->pass) ? " " : "",
                                      r->rule && strcmp(r->rule, r->pass) ? r->rule : "");
    g_string_append(s, m);
    g_free(m);
    g_string_append_printf(s, "    %u tried", r->attempts);
    then_b(s, cb, r->attempts, rb ? rb->attempts : 0);
    g_string_append_printf(s, " · <span foreground=\"%s\">%u applied</span>", ox_window_kind_color(OX_STEP_APPLIED),
                           r->applied);
    then_b(s, cb, r->applied, rb ? rb->applied : 0);
    if (r->rejected || (rb && rb->rejected)) {
      g_string_append_printf(s, " · %u rejected", r->rejected);
      then_b(s, cb, r->rejected, rb ? rb->rejected : 0);
    }
    if (r->check_failed || (rb && rb->check_failed)) {
      g_string_append_printf(s, " · <span foreground=\"%s\">%u check failed</span>",
                             ox_window_kind_color(OX_STEP_CHECK_FAILED), r->check_failed);
      then_b(s, cb, r->check_failed, rb ? rb->check_failed : 0);
    }
    double sec = ox_coverage_pass_seconds(t, r->pass, r->phase);
    if (sec >= 0) {
      char d[32];
      g_string_append_printf(s, " · pass %s", ox_fmt_duration(sec, d, sizeof d));
    }
    g_string_append_printf(s, " · first <a href=\"step:%u\">#%u</a>", r->first + 1, r->first + 1);
    if (r->first_applied != UINT32_MAX && r->first_applied != r->first)
      g_string_append_printf(s, ", applied <a href=\"step:%u\">#%u</a>", r->first_applied + 1, r->first_applied + 1);
    g_string_append_c(s, '\n');
    for (guint32 j = 0; j < r->n_reasons; j++) {
      const OxCoverageReason *x = &r->reasons[j], *xb = ox_coverage_find_reason(rb, x->code);
      g_string_append_printf(s, "    <a href=\"cov:%u:%u\"><tt>%s</tt></a> %u", i, j,
                             ox_reason_code_name((OxReasonCode)x->code), x->count);
      then_b(s, cb, x->count, xb ? xb->count : 0);
      g_string_append_printf(s, " · first <a href=\"step:%u\">#%u</a> · <a href=\"covn:%u:%u\">nodes</a>\n",
                             x->first + 1, x->first + 1, i, j);
      for (guint32 k = 0; k < x->n_details; k++) {
        g_string_append_printf(s, "        %u×", x->details[k].count);
        then_b(s, cb, x->details[k].count, ox_coverage_detail_count(xb, x->details[k].text));
        m = g_markup_printf_escaped(" <a href=\"cov:%u:%u:%u\">%s</a> · <a href=\"covn:%u:%u:%u\">nodes</a>\n", i, j, k,
                                    x->details[k].text, i, j, k);
        g_string_append(s, m);
        g_free(m);
      }
      for (guint32 k = 0; xb && k < xb->n_details; k++) /* values only the other run has */
        if (!ox_coverage_detail_count(x, xb->details[k].text)) {
          m = g_markup_printf_escaped("        0× → <b>%u</b> %s\n", xb->details[k].count, xb->details[k].text);
          g_string_append(s, m);
          g_free(m);
        }
      if (x->n_other) g_string_append_printf(s, "        %u× other values\n", x->n_other);
    }
    for (guint32 j = 0; rb && j < rb->n_reasons; j++) /* codes only the other run has here */
      if (!ox_coverage_find_reason(r, rb->reasons[j].code))
        g_string_append_printf(s, "    <tt>%s</tt> 0 → <b>%u</b>\n", ox_reason_code_name((OxReasonCode)rb->reasons[j].code),
                               rb->reasons[j].count);
  }
  if (cb) passes_b_only(s, c, cb);
}

void ox_window_update_passes_panel(OxWindow *self) {
  GString *s = g_string_new(NULL);
  panel_passes(self, s);
  if (self->panel_markup[3] && strcmp(self->panel_markup[3], s->str) == 0) {
    g_string_free(s, TRUE);
    return;
  }
  g_free(self->panel_markup[3]);
  self->panel_markup[3] = g_string_free(s, FALSE);
  gtk_label_set_markup(GTK_LABEL(self->panel_label[3]), self->panel_markup[3]);
}

gboolean ox_window_filter_coverage(OxWindow *self, const char *spec) {
  if (!spec || !*spec) {
    ox_document_set_filter_coverage(self->doc, NULL, NULL, NULL, -1, NULL);
    return TRUE;
  }
  const OxCoverage *c = coverage(self);
  guint idx[3] = {0, 0, 0}, n = 0;
  const char *p = spec;
  while (*p && n < 3) {
    char *end = NULL;
    guint64 v = g_ascii_strtoull(p, &end, 10);
    if (end == p || v > G_MAXUINT32) return FALSE;
    idx[n++] = (guint)v;
    p = end;
    if (*p == ':') p++;
    else if (*p) return FALSE;
  }
  if (*p || !c || idx[0] >= c->n_rows) return FALSE;
  const OxCoverageRow *r = &c->rows[idx[0]];
  const OxCoverageReason *x = NULL;
  const char *detail = NULL;
  if (n >= 2) {
    if (idx[1] >= r->n_reasons) return FALSE;
    x = &r->reasons[idx[1]];
  }
  if (n == 3) {
    if (idx[2] >= x->n_details) return FALSE;
    detail = x->details[idx[2]].text;
  }
  ox_document_set_filter_coverage(self->doc, r->phase, r->pass, r->rule, x ? x->code : -1, detail);
  guint first = ox_document_first_visible(self->doc);
  if (first) ox_document_set_position(self->doc, first);
  return TRUE;
}

void ox_window_update_panels(OxWindow *self) {
  void (*fill[OX_WINDOW_N_PANELS])(OxWindow *, GString *) = {panel_node, panel_why, panel_checks, panel_passes};
  for (int i = 0; i < OX_WINDOW_N_PANELS; i++) {
    GString *s = g_string_new(NULL);
    fill[i](self, s);
    /* a label given new text is measured again (wrapped text: shaped at least twice), at a cost
     * that grows with the text; most steps leave two of the three panels as they were */
    if (self->panel_markup[i] && strcmp(self->panel_markup[i], s->str) == 0) {
      g_string_free(s, TRUE);
      continue;
    }
    g_free(self->panel_markup[i]);
    self->panel_markup[i] = g_string_free(s, FALSE);
    gtk_label_set_markup(GTK_LABEL(self->panel_label[i]), self->panel_markup[i]);
  }
  ox_window_whatif_refresh(self); /* after "why not?", which may have dropped its queued re-run */
  ox_window_compare_refresh(self); /* the other run follows this one */
}

const char *ox_window_get_panel_markup(OxWindow *self, const char *panel) {
  for (int i = 0; i < OX_WINDOW_N_PANELS; i++)
    if (strcmp(panel, ox_window_panel_names[i]) == 0) return self->panel_markup[i];
  return NULL;
}

void ox_window_show_panel(OxWindow *self, const char *panel) {
  gtk_stack_set_visible_child_name(GTK_STACK(self->stack), panel);
}

/* Follows one of our links. Runs from an idle, never inside the label's own "activate-link":
 * most links change what the panels show, and GtkLabel reads the clicked link again after the
 * signal returns, so new markup set during the signal would free it under GtkLabel's feet. */
static void follow_link(OxWindow *self, const char *uri) {
  if (g_str_has_prefix(uri, "node:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.select-node", "s", uri + 5);
  else if (g_str_has_prefix(uri, "bstep:"))
    ox_window_compare_goto_b(self, (guint)g_ascii_strtoull(uri + 6, NULL, 10));
  else if (g_str_has_prefix(uri, "step:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.goto-step", "u", (guint)g_ascii_strtoull(uri + 5, NULL, 10));
  else if (g_str_has_prefix(uri, "cov:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.filter-coverage", "s", uri + 4);
  else if (g_str_has_prefix(uri, "covn:")) { /* the same, and its records' anchors as search hits */
    gtk_widget_activate_action(GTK_WIDGET(self), "win.filter-coverage", "s", uri + 5);
    gtk_widget_activate_action(GTK_WIDGET(self), "win.search-for", "s", "anchors:");
  }
  else if (g_str_has_prefix(uri, "graph:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.graph", "u", (guint)g_ascii_strtoull(uri + 6, NULL, 10));
  else if (g_str_has_prefix(uri, "whatif:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.check-option", "s", uri + 7);
  else if (g_str_has_prefix(uri, "rerun:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.optimize-with", "s", uri + 6);
  else if (g_str_has_prefix(uri, "search:"))
    gtk_widget_activate_action(GTK_WIDGET(self), "win.search-for", "s", uri + 7);
}

typedef struct {
  OxWindow *win; /* a reference */
  char *uri;
} LinkJob;

static gboolean link_idle(gpointer data) {
  LinkJob *j = data;
  if (j->win->doc) follow_link(j->win, j->uri); /* not after the window was disposed */
  g_object_unref(j->win);
  g_free(j->uri);
  g_free(j);
  return G_SOURCE_REMOVE;
}

gboolean ox_window_on_activate_link(GtkLabel *label, const char *uri, OxWindow *self) {
  (void)label;
  static const char *const ours[] = {"node:",   "bstep:", "step:",  "cov:",   "covn:",
                                     "graph:",  "whatif:", "rerun:", "search:"};
  for (guint i = 0; i < G_N_ELEMENTS(ours); i++)
    if (g_str_has_prefix(uri, ours[i])) {
      LinkJob *j = g_new(LinkJob, 1);
      j->win = g_object_ref(self);
      j->uri = g_strdup(uri);
      g_idle_add(link_idle, j);
      return TRUE;
    }
  return FALSE; /* anything else: GTK opens it (none is written today) */
}
