/* ox_view.h - bounded views of large graphs (issue 6): a focus neighbourhood, and a hierarchy
 * of clusters (module path / name prefix) that can be collapsed into an overview graph.
 *
 * Industrial graphs have 10k-100k nodes and dot needs minutes above ~10k, so nothing ever
 * lays out a whole large graph: the UI and `optimus convert --focus/--overview` lay out one of
 * these views, each within a node budget. Everything here is linear in the part of the graph
 * it touches.
 */
#ifndef OX_VIEW_H
#define OX_VIEW_H

#include "ir/ox_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Live nodes within `radius` hops of any seed, following inputs and users (an undirected
 * BFS), nearest first; stops after max_nodes (0 = no limit). Returns how many were found
 * (<= max_nodes); fills out (capacity max_out). */
uint32_t ox_view_neighborhood(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t radius,
                              uint32_t max_nodes, OxNodeId *out, uint32_t max_out);

/* ox_view_neighborhood that neither counts nor walks through nodes with skip[id] set (folded
 * parameters); skip may be NULL. */
uint32_t ox_view_neighborhood_skip(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t radius,
                                   uint32_t max_nodes, const uint8_t *skip, OxNodeId *out, uint32_t max_out);

/* The largest radius (<= max_radius) whose neighbourhood fits in budget nodes. */
uint32_t ox_view_fit_radius(const OxGraph *g, const OxNodeId *seeds, uint32_t n_seeds, uint32_t max_radius,
                            uint32_t budget);

/* ------------------------------------------------------------------ folded parameters */

/* Parameters and constants are drawn as part of their consumers ("+3 params" on the linear),
 * so rows of weights no longer dominate a picture. A node is parameter-like when it is a
 * placeholder or get_attr, or a call with one or two inputs, all parameter-like, and one user
 * (t(primals_3), convert_element_type(w)); it folds when every user is a folded
 * parameter-like node or a node that still has a data (not parameter-like) input. So the
 * model's real inputs stay (their user has no other data input), weights fold into their
 * linear, a symbolic size used by 117 nodes folds into each of them, and a stack of 128
 * weights shows as one stack. fold[id] (capacity g->n_nodes) receives the node a folded node
 * is drawn in (its first drawn consumer), 0 for drawn nodes; n_params[id] (optional, capacity
 * g->n_nodes) the folded placeholders / get_attrs that feed id. Works on any graph (a union of
 * steps included): the order is computed, not assumed. Returns the number of folded nodes. */
uint32_t ox_view_fold_params(const OxGraph *g, uint32_t *fold, uint16_t *n_params);

/* ------------------------------------------------------------------ hierarchy */

/* Cluster path of a node: its module path when the dump has one ("layers.0.attn"), else a
 * prefix derived from its name ("layers_0_towers_3_linear0_weight" -> "layers.0.towers.3";
 * "getitem_17" -> "" (top level)). Writes into buf; returns buf. */
const char *ox_view_cluster_path(const OxNode *n, char *buf, size_t cap);

typedef enum OxClusterKind {
  OX_CLUSTER_MODULE = 0, /* a module path from the dump (meta or names) */
  OX_CLUSTER_BAND,       /* structure: a band of consecutive depths, cut where few edges cross */
  OX_CLUSTER_PART,       /* structure: a weakly connected part (a tower between a split and a cat) */
  OX_CLUSTER_GROUP,      /* structure: parts with the same ops ("12 x addmm · layer_norm · tanh") */
  OX_CLUSTER_KIND,       /* structure: loose nodes of one op ("165 placeholders") */
  OX_CLUSTER_CHUNK,      /* structure: consecutive items, when nothing else brings a cluster down to size */
} OxClusterKind;

typedef struct OxCluster {
  const char *path;      /* "layers.0.towers.3"; "" for the root; "~2.~5" for structural ones
                            (child 5 of child 2 of the root); owned by the hierarchy */
  const char *label;     /* what to show: last component ("3"), "(top)", or for structural clusters
                            their first and last node ("split_12 … cat_13") or a count
                            ("12 × addmm · layer_norm · tanh") */
  OxClusterKind kind;
  int32_t parent;        /* index into clusters, -1 for the root */
  uint32_t depth;
  uint32_t n_direct;     /* nodes directly in this cluster */
  uint32_t n_total;      /* nodes in this cluster and below */
  uint32_t first_child, n_children; /* children are contiguous in child_index */
} OxCluster;

typedef struct OxHierarchy {
  OxCluster *clusters;   /* [0] is the root */
  uint32_t n_clusters;
  uint32_t *child_index; /* cluster indices, grouped per parent */
  int32_t *node_cluster; /* per node id: its (deepest) cluster, -1 for erased/unused ids */
  uint32_t n_node_ids;
  char **owned;          /* owned storage for paths and labels, NULL-terminated */
} OxHierarchy;

/* Items a cluster shows when opened: its direct nodes and its children. The hierarchy keeps it
 * at most OX_VIEW_FAN for every cluster, so an overview never has to fail: the root always
 * fits, and so does every expansion of one cluster. */
#define OX_VIEW_FAN 40

/* The hierarchy of g: module paths where the dump has them (meta, names), then every cluster
 * with more than OX_VIEW_FAN items subdivided by structure (ox_view_hierarchy_refine). */
OxHierarchy *ox_view_hierarchy(const OxGraph *g);
void ox_view_hierarchy_free(OxHierarchy *h);

/* Subdivides, by the structure of g, every cluster with more than fan items (direct nodes +
 * children) until none has, whatever the names: bands of consecutive depths cut where few
 * edges cross (between the layers of a recommendation model, the blocks of a transformer),
 * weakly connected parts of a band with its hubs left out (the towers between a split and its
 * cat), parts with the same ops grouped ("12 × …"), loose nodes grouped by op, and as a last
 * resort consecutive chunks. Deterministic; linear in nodes and edges per hierarchy level.
 * h->node_cluster must cover g's node ids (h->n_node_ids == g->n_nodes); counts and child lists
 * are rebuilt. */
void ox_view_hierarchy_refine(OxHierarchy *h, const OxGraph *g, uint32_t fan);
/* Recomputes n_direct, n_total and the child lists from node_cluster and the parent links. */
void ox_view_hierarchy_reindex(OxHierarchy *h);

/* An overview graph: every cluster in `open` (a per-cluster flag; NULL = only the root is
 * open) shows its direct nodes and its children; a closed cluster is one node (op
 * call_module, target = the cluster path, module_type "cluster", name = cluster path with
 * dots as underscores, target = "PATH [N nodes]") standing for all nodes below it. Edges are the graph's edges between
 * the shown items. Meta of collapsed nodes is empty; node ids of shown real nodes are
 * recorded in provenance (1 entry) so a UI can map back. Returns a new graph. */
OxGraph *ox_view_overview(const OxGraph *g, const OxHierarchy *h, const uint8_t *open);

/* ox_view_overview with the mapping back: node_item[id] (capacity g->n_nodes) receives the
 * overview node standing for node id (0 for erased ids), item_cluster[item] (capacity
 * ox_view_overview_size(h, open) + 1) the cluster index a collapsed overview node stands for,
 * -1 for a shown real node. Either may be NULL. */
OxGraph *ox_view_overview_map(const OxGraph *g, const OxHierarchy *h, const uint8_t *open, uint32_t *node_item,
                              int32_t *item_cluster);

/* ox_view_overview_map where folded parameters (fold from ox_view_fold_params; NULL = none) are
 * no items of their own: they map to the item of the node they are drawn in. */
OxGraph *ox_view_overview_map_fold(const OxGraph *g, const OxHierarchy *h, const uint8_t *open, const uint32_t *fold,
                                   uint32_t *node_item, int32_t *item_cluster);

/* Number of nodes ox_view_overview would make for `open` (without building it): every open
 * cluster contributes its direct nodes and its children, each closed child counting one. */
uint32_t ox_view_overview_size(const OxHierarchy *h, const uint8_t *open);

/* Opens clusters breadth-first (shallowest first, in creation order) into `open` (capacity
 * h->n_clusters; the root is always opened) while the overview stays within `budget` nodes,
 * so a 100k-node graph starts as the largest readable map of its module structure. Returns
 * the overview size reached (it may exceed budget only when the root alone does). */
uint32_t ox_view_auto_open(const OxHierarchy *h, uint32_t budget, uint8_t *open);

#ifdef __cplusplus
}
#endif
#endif
