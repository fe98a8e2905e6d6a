/* ox-application.c - the optimus-debugger application (see ox-application.h).
 *
 * NON_UNIQUE: every invocation is its own process with its own window, so a debugger started
 * from a script never hands its files to an already running instance. HANDLES_OPEN: the first
 * file is the graph dump, the second (optional) its trace.
 */
#include "ox-application.h"

#include "ox-window.h"

#ifndef OX_SOURCE_DATADIR
#define OX_SOURCE_DATADIR ""
#endif
#ifndef OPTIMUS_VERSION
#define OPTIMUS_VERSION "0.1.0"
#endif

struct _OxApplication {
  GtkApplication parent_instance;
  char **input_shapes; /* --input-shape (repeatable) */
  char *shapes_file;   /* --shapes */
  char *compare_trace; /* --compare */
  char *diff_graph;    /* --diff */
  int graph;           /* --graph N (1-based), 0 = the first */
};

G_DEFINE_FINAL_TYPE(OxApplication, ox_application, GTK_TYPE_APPLICATION)

static void act_quit(GSimpleAction *a, GVariant *p, gpointer data) {
  (void)a;
  (void)p;
  g_application_quit(G_APPLICATION(data));
}

static void act_about(GSimpleAction *a, GVariant *p, gpointer data) {
  (void)a;
  (void)p;
  GtkWindow *parent = gtk_application_get_active_window(GTK_APPLICATION(data));
  const char *authors[] = {"The Optimus authors", NULL};
  gtk_show_about_dialog(parent, "program-name", "Optimus Debugger", "version", OPTIMUS_VERSION, "comments",
                        "Step through every graph rewrite of the Optimus engine: matches, rejections with their "
                        "reasons, semantic checks and provenance, on PyTorch FX graphs.",
                        "logo-icon-name", OX_APPLICATION_ID, "license-type", GTK_LICENSE_MIT_X11, "authors", authors,
                        "website", "https://github.com/optimus", NULL);
}

static void act_new_window(GSimpleAction *a, GVariant *p, gpointer data) {
  (void)a;
  (void)p;
  gtk_window_present(GTK_WINDOW(ox_window_new(GTK_APPLICATION(data))));
}

static const GActionEntry app_entries[] = {
  {"quit", act_quit, NULL, NULL, NULL, {0}},
  {"about", act_about, NULL, NULL, NULL, {0}},
  {"new-window", act_new_window, NULL, NULL, NULL, {0}},
};

void ox_application_set_accels(GtkApplication *app) {
  static const struct {
    const char *action;
    const char *accels[3];
  } accels[] = {
    {"app.quit", {"<Control>q", NULL}},
    {"app.new-window", {"<Control>n", NULL}},
    {"win.open", {"<Control>o", NULL}},
    {"win.open-trace", {"<Control><Shift>o", NULL}},
    {"win.export::json", {"<Control>s", NULL}},
    {"win.export-trace", {"<Control><Shift>e", NULL}},
    {"win.search", {"<Control>f", NULL}},
    {"win.graph-parent", {"<Alt>Up", NULL}},
    {"win.search-next", {"<Control>g", "F3", NULL}},
    {"win.search-prev", {"<Control><Shift>g", "<Shift>F3", NULL}},
    {"win.zoom-in", {"<Control>plus", "<Control>equal", NULL}},
    {"win.zoom-out", {"<Control>minus", NULL}},
    {"win.zoom-reset", {"<Control>0", NULL}},
    {"win.cancel", {"<Control>period", NULL}},
    {"win.whatif-run", {"<Control>Return", NULL}},
    {"win.close", {"<Control>w", NULL}},
    {"win.show-help-overlay", {"<Control>question", NULL}},
  };
  for (guint i = 0; i < G_N_ELEMENTS(accels); i++)
    gtk_application_set_accels_for_action(app, accels[i].action, accels[i].accels);
}

static void ox_application_startup(GApplication *app) {
  G_APPLICATION_CLASS(ox_application_parent_class)->startup(app);
  g_action_map_add_action_entries(G_ACTION_MAP(app), app_entries, G_N_ELEMENTS(app_entries), app);
  ox_application_set_accels(GTK_APPLICATION(app));
  /* uninstalled runs find the icon next to the sources; installed ones in hicolor */
  GdkDisplay *display = gdk_display_get_default();
  if (display && g_file_test(OX_SOURCE_DATADIR, G_FILE_TEST_IS_DIR))
    gtk_icon_theme_add_search_path(gtk_icon_theme_get_for_display(display), OX_SOURCE_DATADIR);
  gtk_window_set_default_icon_name(OX_APPLICATION_ID);
}

static void ox_application_activate(GApplication *app) {
  OxApplication *self = OX_APPLICATION(app);
  if (self->shapes_file || (self->input_shapes && self->input_shapes[0]))
    g_printerr("optimus-debugger: --input-shape and --shapes apply to a GRAPH given on the command line; "
               "none was given\n");
  gtk_window_present(GTK_WINDOW(ox_window_new(GTK_APPLICATION(app))));
}

static void ox_application_open(GApplication *app, GFile **files, int n_files, const char *hint) {
  (void)hint;
  OxApplication *self = OX_APPLICATION(app);
  OxWindow *w = ox_window_new(GTK_APPLICATION(app));
  gtk_window_present(GTK_WINDOW(w));
  char *graph = g_file_get_path(files[0]);
  char *trace = n_files > 1 ? g_file_get_path(files[1]) : NULL;
  guint n_specs = self->input_shapes ? g_strv_length(self->input_shapes) : 0;
  if (n_specs || self->shapes_file)
    ox_document_set_pending_shapes(ox_window_get_document(w), (const char *const *)self->input_shapes, n_specs,
                                   self->shapes_file);
  if (self->graph > 0) ox_document_set_pending_graph(ox_window_get_document(w), (guint)self->graph - 1);
  if (graph && ox_window_open(w, graph, trace) && self->compare_trace) {
    GError *err = NULL;
    if (!ox_window_compare_open(w, self->compare_trace, &err)) {
      g_printerr("optimus-debugger: cannot compare with %s: %s\n", self->compare_trace, err->message);
      g_error_free(err);
    }
  }
  if (graph && self->diff_graph && ox_window_get_document(w) && ox_document_has_graph(ox_window_get_document(w))) {
    GError *err = NULL;
    if (!ox_window_diff_open(w, self->diff_graph, &err)) {
      g_printerr("optimus-debugger: cannot diff with %s: %s\n", self->diff_graph, err->message);
      g_error_free(err);
    }
  }
  g_free(graph);
  g_free(trace);
}

static void ox_application_finalize(GObject *o) {
  OxApplication *self = OX_APPLICATION(o);
  g_strfreev(self->input_shapes);
  g_free(self->shapes_file);
  g_free(self->compare_trace);
  g_free(self->diff_graph);
  G_OBJECT_CLASS(ox_application_parent_class)->finalize(o);
}

static void ox_application_class_init(OxApplicationClass *k) {
  G_OBJECT_CLASS(k)->finalize = ox_application_finalize;
  GApplicationClass *ac = G_APPLICATION_CLASS(k);
  ac->startup = ox_application_startup;
  ac->activate = ox_application_activate;
  ac->open = ox_application_open;
}

static void ox_application_init(OxApplication *self) {
  /* handled by main() before the application starts (app/optimus-debugger.c); listed here so
   * --help shows it */
  static const GOptionEntry bench[] = {
    {"benchmark", 0, 0, G_OPTION_ARG_NONE, NULL,
     "Open GRAPH [TRACE] in a 1280x800 window, time opening, stepping, search and selection, print one JSON line "
     "and exit (nonzero if the view failed or a wait timed out)",
     NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, NULL, "With --benchmark: seconds any single wait may take (default 120)", "S"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_application_add_main_option_entries(G_APPLICATION(self), bench);
  const GOptionEntry shapes[] = {
    {"input-shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &self->input_shapes,
     "Shape of a placeholder or parameter of GRAPH, e.g. x=64,224 or x=f32:64,224 (repeatable); parameters "
     "without one are inferred from their uses",
     "N=DIMS"},
    {"graph", 0, 0, G_OPTION_ARG_INT, &self->graph, "Show graph N of GRAPH's dump (1-based; TRACE belongs to it)", "N"},
    {"compare", 0, 0, G_OPTION_ARG_FILENAME, &self->compare_trace,
     "Another trace of GRAPH to show side by side with TRACE, stepping together (docs/debugger.md)", "TRACE_B"},
    {"diff", 0, 0, G_OPTION_ARG_FILENAME, &self->diff_graph,
     "Show the difference from GRAPH to GRAPH_B (another dump of the model) as a run, one step per region",
     "GRAPH_B"},
    {"shapes", 0, 0, G_OPTION_ARG_FILENAME, &self->shapes_file,
     "Shapes of GRAPH's placeholders and parameters: a JSON object or a .safetensors file (docs/cli.md)", "FILE"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_application_add_main_option_entries(G_APPLICATION(self), shapes);
  g_application_set_option_context_parameter_string(G_APPLICATION(self), "[GRAPH [TRACE]]");
  g_application_set_option_context_summary(
    G_APPLICATION(self), "Step through the Optimus rewrites of a PyTorch FX graph dump.\n"
                         "Without TRACE the default optimization runs in the background.");
}

OxApplication *ox_application_new(void) {
  g_set_application_name("Optimus Debugger");
  return g_object_new(OX_TYPE_APPLICATION, "application-id", OX_APPLICATION_ID, "flags",
                      G_APPLICATION_HANDLES_OPEN | G_APPLICATION_NON_UNIQUE, NULL);
}
