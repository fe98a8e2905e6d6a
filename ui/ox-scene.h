/* ox-scene.h - what the canvas shows of a large graph, and its layouts (issue 6).
 *
 * A scene is one bounded, laid-out view of the document's history:
 *   - full:     every node of the union graph (only when it fits the node budget);
 *   - focus:    the radius-k neighbourhood (in the union graph) of the current step's nodes or
 *               of the selection, extended to the next steps of the trace while it fits;
 *   - overview: the cluster hierarchy (ox_view_hierarchy: module paths / name prefixes, then
 *               structure, so every cluster shows at most OX_VIEW_FAN items) as an overview graph
 *               (ox_view_overview): open clusters show their nodes and sub-clusters, closed ones
 *               are one node with a count; clusters expand and collapse on demand.
 * `auto` picks full when the union graph fits the budget, else the overview until the user
 * steps or selects something far away, then focus.
 *
 * Parameters are folded into their consumers (ox_view_fold_params: a badge, no box), and every
 * box is sized for its two label lines (ox_scene_item_label), measured in the canvas's fonts.
 * No layout request ever exceeds the node budget (the hook reports every request, tests assert
 * it). Layouts run on a worker (GTask) with ox_layout_auto: dot in the helper process within the
 * time budget for whole-graph scenes, our layered layout (folded to the canvas's aspect ratio)
 * for the others and whenever dot is slow; they are cached by a key of the laid-out subgraph
 * (sorted item identities + edge set + engine and kind; LRU of OX_SCENE_CACHE entries); a
 * request made while the main loop has events pending starts once they are handled (a burst of
 * steps asks for one layout), and a superseded layout is cancelled through its atomic flag (a
 * dot helper is killed) and its result dropped. Stepping re-lays out only when the step's nodes leave the scene: positions are
 * those of the union graph's layout, so untouched nodes never move; a step whose few missing
 * nodes all have a laid-out neighbour gets them placed next to those neighbours without
 * Graphviz ("placed" boxes); only a step elsewhere in the graph asks for a new focus layout.
 * While idle, the scene lays out ahead the focus of the next step that will leave it (a
 * prefetch, into the cache; a request for the same subgraph adopts it while it runs).
 *
 * Items: a scene draws "items", the node ids of the graph it laid out. For full and focus scenes
 * that is the union graph and an item is a uid; for the overview an item is an overview node
 * (a real node, mapped back to its uid, or a collapsed cluster).
 *
 * Plain GObject (no widgets): tests drive it without a display.
 */
#ifndef OX_SCENE_H
#define OX_SCENE_H

#include <gio/gio.h>

#include "ox-document.h"
#include "layout/ox_layout.h"
#include "layout/ox_view.h"

G_BEGIN_DECLS

typedef enum OxViewMode {
  OX_VIEW_AUTO = 0,
  OX_VIEW_FULL,
  OX_VIEW_FOCUS,
  OX_VIEW_OVERVIEW
} OxViewMode;

const char *ox_view_mode_name(OxViewMode m); /* "auto", "full", "focus", "overview" */
gboolean ox_view_mode_from_name(const char *s, OxViewMode *out);

#define OX_SCENE_CACHE 24
#define OX_SCENE_MAX_RADIUS 4
#define OX_SCENE_FONT_NAME "Sans Bold 9"  /* a node's first line (its name, a cluster's label) */
#define OX_SCENE_FONT_SMALL "Sans 8"      /* its second line (op, node count) */
#define OX_SCENE_BOX_MAX 260.0            /* widest box: longer names are elided in the middle */
#define OX_SCENE_FULL_MAX 800             /* automatic view: the whole graph up to this many drawn nodes */

#define OX_TYPE_SCENE (ox_scene_get_type())
G_DECLARE_FINAL_TYPE(OxScene, ox_scene, OX, SCENE, GObject)

OxScene *ox_scene_new(OxDocument *doc);
OxDocument *ox_scene_get_document(OxScene *self);

/* Mode: what the user asked for; shown mode: what is shown (auto resolved). */
void ox_scene_set_mode(OxScene *self, OxViewMode mode);
OxViewMode ox_scene_get_mode(OxScene *self);
OxViewMode ox_scene_get_shown_mode(OxScene *self);

/* Node budget: the most nodes any single layout request may have (default 2500). */
void ox_scene_set_budget(OxScene *self, guint budget);
guint ox_scene_get_budget(OxScene *self);
/* Focus size: the most nodes an automatic-radius focus scene holds (default 300; never above the
 * budget): small focus layouts keep dot interactive (~0.1 s at 300 nodes). */
void ox_scene_set_focus_size(OxScene *self, guint n);
guint ox_scene_get_focus_size(OxScene *self);
/* Focus radius: 0 = automatic (the largest <= OX_SCENE_MAX_RADIUS whose neighbourhood fits the
 * focus size); shown radius = the radius of the current focus scene. */
void ox_scene_set_radius(OxScene *self, guint radius);
guint ox_scene_get_radius(OxScene *self);
guint ox_scene_get_shown_radius(OxScene *self);

/* Focus on a node (uid): switches auto/overview to focus and lays out around it if it is not
 * already in the scene. */
void ox_scene_focus_uid(OxScene *self, guint32 uid);

/* Hierarchy (built once per history, on the union graph). */
const OxHierarchy *ox_scene_get_hierarchy(OxScene *self);
gboolean ox_scene_cluster_is_open(OxScene *self, guint32 cluster);
/* Expand fails (FALSE, note says why) when the overview would exceed the budget. */
gboolean ox_scene_expand(OxScene *self, guint32 cluster);
gboolean ox_scene_collapse(OxScene *self, guint32 cluster); /* and every cluster below it */
guint ox_scene_get_overview_size(OxScene *self);              /* items of the current open set */

/* The laid-out boxes (layout nodes plus placed ones), sorted by item for the layout part. */
const OxLayoutNode *ox_scene_get_boxes(OxScene *self, guint *n);
gboolean ox_scene_box(OxScene *self, guint32 item, double *x, double *y, double *w, double *h);
const OxLayoutEdge *ox_scene_edge(OxScene *self, guint32 from_item, guint32 to_item);
const OxLayout *ox_scene_get_layout(OxScene *self); /* NULL before the first layout */
void ox_scene_get_size(OxScene *self, double *width, double *height);
guint32 ox_scene_item_uid(OxScene *self, guint32 item);      /* 0 for a cluster item */
gint32 ox_scene_item_cluster(OxScene *self, guint32 item);   /* -1 for a real node */
guint32 ox_scene_uid_item(OxScene *self, guint32 uid);       /* the item showing uid (its cluster's in the overview), 0 = not in the scene */
gboolean ox_scene_is_overview(OxScene *self);                /* items are overview nodes */
const OxGraph *ox_scene_get_graph(OxScene *self);            /* the graph the items belong to */

/* The two label lines of an item of the current scene (what its box is sized for): a node's
 * name and op, or a cluster's label and "161,592 nodes". */
void ox_scene_item_label(OxScene *self, guint32 item, char *l1, gsize c1, char *l2, gsize c2);
/* Folded parameters drawn as part of the item (its "+3 params" badge), 0 for none. */
guint ox_scene_item_params(OxScene *self, guint32 item);
/* The uid a folded parameter is drawn in (its consumer), or uid itself. */
guint32 ox_scene_drawn_uid(OxScene *self, guint32 uid);
/* Width in pixels (at zoom 1) of text in the name font (bold) or the small font. */
double ox_scene_text_width(const char *text, gboolean bold);

/* Layout engine: AUTO (default) lays whole graphs out with dot when it answers within the time
 * budget (else with the built-in layered layout), overviews and focus scenes (re-laid out while
 * stepping, folded to the window's shape) with the layered layout; DOT uses dot wherever it
 * answers in time; LAYERED never uses dot. */
void ox_scene_set_engine(OxScene *self, OxLayoutEngine engine);
OxLayoutEngine ox_scene_get_engine(OxScene *self);
void ox_scene_set_time_budget(OxScene *self, double seconds); /* default 2 s */
/* The canvas size in pixels: new layouts aim at its aspect ratio. */
void ox_scene_set_viewport(OxScene *self, double width, double height);

gboolean ox_scene_get_busy(OxScene *self);   /* a layout is being computed */
const char *ox_scene_get_note(OxScene *self); /* one line for the canvas ("focus: 412 of 161593 nodes, radius 3") */
const char *ox_scene_get_error(OxScene *self);

/* Statistics (tests, benchmark). */
typedef struct OxSceneStats {
  guint n_requests;     /* layouts sent to Graphviz */
  guint n_cache_hits;   /* scenes served from the cache */
  guint n_placed;       /* nodes placed next to their neighbours without a layout */
  guint n_reused;       /* frames whose step was already in the scene */
  guint max_request;    /* the largest request, in nodes */
  guint n_cancelled;    /* layouts superseded before they finished */
  guint n_prefetches;   /* focus layouts of a coming step started while idle */
  guint n_prefetch_hits;/* steps whose layout was a prefetch still running (cache hits count the finished ones) */
} OxSceneStats;
const OxSceneStats *ox_scene_get_stats(OxScene *self);

/* Called on the main thread for every layout request with its node count (tests). */
typedef void (*OxSceneHook)(guint n_nodes, gpointer data);
void ox_scene_set_request_hook(OxScene *self, OxSceneHook hook, gpointer data);

/* Cache key of a subgraph (sorted item identities, the edges among them, options); exposed for
 * tests. ids need not be sorted. */
guint64 ox_scene_subgraph_key(const OxGraph *g, const guint32 *ids, guint n, const guint32 *identity,
                              guint64 options);

G_END_DECLS
#endif
