/* ox-step-row.c - a timeline row (see ox-step-row.h). */
#include "ox-step-row.h"

struct _OxStepRow {
  GtkWidget parent_instance;
  char *title, *subtitle;
  gboolean header, has_dot;
  GdkRGBA dot;
};

G_DEFINE_FINAL_TYPE(OxStepRow, ox_step_row, GTK_TYPE_WIDGET)

#define PAD_X 4.0
#define PAD_Y 2.0
#define GAP 1.0      /* between the two lines */
#define DOT_W 14.0   /* the dot's column */
#define SUB_SCALE 0.83

/* The height of one line of the widget's font at scale 1 or SUB_SCALE, in pixels. Every row has
 * the same font, so the last answer per scale is kept (keyed by the font): a screenful of new
 * rows asks once, not once per row. Main thread only, like every widget. */
static int line_height(GtkWidget *w, double scale) {
  static PangoFontDescription *last_fd[2];
  static int last_h[2];
  int slot = scale == 1.0 ? 0 : 1;
  PangoContext *pc = gtk_widget_get_pango_context(w);
  const PangoFontDescription *fd = pango_context_get_font_description(pc);
  if (last_fd[slot] && pango_font_description_equal(last_fd[slot], fd)) return last_h[slot];
  PangoFontDescription *d = pango_font_description_copy(fd);
  int size = pango_font_description_get_size(d);
  if (scale != 1.0 && size > 0) {
    if (pango_font_description_get_size_is_absolute(d))
      pango_font_description_set_absolute_size(d, size * scale);
    else
      pango_font_description_set_size(d, (int)(size * scale));
  }
  PangoFontMetrics *m = pango_context_get_metrics(pc, d, NULL);
  int h = pango_font_metrics_get_height(m);
  if (h <= 0) h = pango_font_metrics_get_ascent(m) + pango_font_metrics_get_descent(m);
  pango_font_metrics_unref(m);
  pango_font_description_free(d);
  if (last_fd[slot]) pango_font_description_free(last_fd[slot]);
  last_fd[slot] = pango_font_description_copy(fd);
  last_h[slot] = (h + PANGO_SCALE - 1) / PANGO_SCALE;
  return last_h[slot];
}

static void ox_step_row_measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_base,
                                int *nat_base) {
  (void)for_size;
  *min_base = *nat_base = -1;
  if (o == GTK_ORIENTATION_HORIZONTAL) {
    *min = 40;
    *nat = 200;
    return;
  }
  int h = (int)(2 * PAD_Y + GAP) + line_height(w, 1.0) + line_height(w, SUB_SCALE);
  *min = *nat = h;
}

static PangoLayout *line_layout(GtkWidget *w, const char *text, int width, double scale, gboolean bold) {
  PangoLayout *l = gtk_widget_create_pango_layout(w, text);
  pango_layout_set_single_paragraph_mode(l, TRUE);
  pango_layout_set_ellipsize(l, PANGO_ELLIPSIZE_END);
  pango_layout_set_width(l, MAX(width, 1) * PANGO_SCALE);
  PangoAttrList *a = pango_attr_list_new();
  if (scale != 1.0) pango_attr_list_insert(a, pango_attr_scale_new(scale));
  if (bold) pango_attr_list_insert(a, pango_attr_weight_new(PANGO_WEIGHT_BOLD));
  pango_layout_set_attributes(l, a);
  pango_attr_list_unref(a);
  return l;
}

static void ox_step_row_snapshot(GtkWidget *w, GtkSnapshot *snap) {
  OxStepRow *self = OX_STEP_ROW(w);
  int width = gtk_widget_get_width(w);
  GdkRGBA fg;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color(gtk_widget_get_style_context(w), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  double x = PAD_X + (self->header ? 0 : DOT_W);
  int h1 = line_height(w, 1.0);
  if (self->has_dot && !self->header) {
    double r = MIN(h1, 14) * 0.28;
    graphene_rect_t b = GRAPHENE_RECT_INIT(PAD_X + DOT_W / 2 - r, PAD_Y + h1 / 2.0 - r, 2 * r, 2 * r);
    GskRoundedRect rr;
    gsk_rounded_rect_init_from_rect(&rr, &b, r);
    gtk_snapshot_push_rounded_clip(snap, &rr);
    gtk_snapshot_append_color(snap, &self->dot, &b);
    gtk_snapshot_pop(snap);
  }
  int tw = (int)(width - x - PAD_X);
  if (tw <= 4) return;
  if (self->title && *self->title) {
    PangoLayout *l = line_layout(w, self->title, tw, 1.0, self->header);
    gtk_snapshot_save(snap);
    gtk_snapshot_translate(snap, &GRAPHENE_POINT_INIT(x, PAD_Y));
    gtk_snapshot_append_layout(snap, l, &fg);
    gtk_snapshot_restore(snap);
    g_object_unref(l);
  }
  if (self->subtitle && *self->subtitle) {
    GdkRGBA dim = fg;
    dim.alpha *= 0.55f;
    PangoLayout *l = line_layout(w, self->subtitle, tw, SUB_SCALE, FALSE);
    gtk_snapshot_save(snap);
    gtk_snapshot_translate(snap, &GRAPHENE_POINT_INIT(x, PAD_Y + h1 + GAP));
    gtk_snapshot_append_layout(snap, l, &dim);
    gtk_snapshot_restore(snap);
    g_object_unref(l);
  }
}

char *ox_step_row_full_text(OxStepRow *self) {
  const char *t = self->title ? self->title : "", *sub = self->subtitle ? self->subtitle : "";
  return *sub ? g_strdup_printf("%s\n%s", t, sub) : g_strdup(t);
}

/* The tooltip is made when GTK asks for it, not set on every bind: gtk_widget_set_tooltip_text
 * makes GTK query the tooltip under the pointer again, a pick of the whole window each time, and
 * the step list rebinds its rows on every step (14 % of a stepping benchmark's time). */
static gboolean ox_step_row_query_tooltip(GtkWidget *w, int x, int y, gboolean keyboard, GtkTooltip *tooltip) {
  (void)x;
  (void)y;
  (void)keyboard;
  OxStepRow *self = OX_STEP_ROW(w);
  if (!self->title || !*self->title) return FALSE;
  char *all = ox_step_row_full_text(self);
  gtk_tooltip_set_text(tooltip, all);
  g_free(all);
  return TRUE;
}

static void ox_step_row_finalize(GObject *o) {
  OxStepRow *self = OX_STEP_ROW(o);
  g_free(self->title);
  g_free(self->subtitle);
  G_OBJECT_CLASS(ox_step_row_parent_class)->finalize(o);
}

static void ox_step_row_class_init(OxStepRowClass *k) {
  G_OBJECT_CLASS(k)->finalize = ox_step_row_finalize;
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(k);
  wc->measure = ox_step_row_measure;
  wc->snapshot = ox_step_row_snapshot;
  wc->query_tooltip = ox_step_row_query_tooltip;
  gtk_widget_class_set_accessible_role(wc, GTK_ACCESSIBLE_ROLE_LABEL);
  gtk_widget_class_set_css_name(wc, "oxsteprow");
}

static void ox_step_row_init(OxStepRow *self) { gtk_widget_set_has_tooltip(GTK_WIDGET(self), TRUE); }

GtkWidget *ox_step_row_new(void) { return g_object_new(OX_TYPE_STEP_ROW, NULL); }

void ox_step_row_set(OxStepRow *self, gboolean header, const GdkRGBA *dot, const char *title, const char *subtitle) {
  g_return_if_fail(OX_IS_STEP_ROW(self));
  self->header = header;
  self->has_dot = dot != NULL;
  if (dot) self->dot = *dot;
  g_free(self->title);
  g_free(self->subtitle);
  self->title = g_strdup(title ? title : "");
  self->subtitle = g_strdup(subtitle ? subtitle : "");
  char *all = ox_step_row_full_text(self);
  gtk_accessible_update_property(GTK_ACCESSIBLE(self), GTK_ACCESSIBLE_PROPERTY_LABEL, all, -1);
  g_free(all);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

const char *ox_step_row_get_title(OxStepRow *self) { return self->title; }
const char *ox_step_row_get_subtitle(OxStepRow *self) { return self->subtitle; }
