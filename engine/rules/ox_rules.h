/* ox_rules.h - user-defined rewrite rules, loaded from rule files at run time (issue 7).
 *
 * A rule file (docs/rules.md) holds pattern rules (`rule NAME { match: ... where: ...
 * replace: ... }`, optionally grouped in `pass NAME { ... }` blocks) and declarative batch
 * rules (`batch NAME { op: ...; key: ...; ... }`). Loading compiles them to the very data the
 * built-in passes use: OxPat trees run by ox_pat_pass_run (ox_pattern.h) and OxBatchRule rows
 * run by ox_batch_apply (ox_batch.h). Each pass of a file becomes one OxPassInfo, so rules run
 * through the same driver (ox_optimize), step protocol, semantic checks and trace as the
 * built-in passes; their steps carry the rule name (OxStep.rule) and its source location
 * (OxStep.rule_file / rule_line: the rule's line for applied steps, the line of the failing
 * sub-pattern or guard for rejections).
 *
 * Loading is all or nothing: a file with any error returns -1, adds every error it found as
 * a located diagnostic (FILE:LINE:COL: error: ...) and sets *out = NULL.
 *
 * Using a rule set (the CLI's `--rules FILE`, the debugger):
 *
 *     OxRuleSet *rs;
 *     OxDiagList d;
 *     ox_diags_init(&d, path);
 *     if (ox_rules_load(path, &rs, &d) != 0) { show d; keep the previous set; }
 *     OxPipeline p;
 *     ox_pipeline_default(g, &p);          // or from a config / a pass list
 *     ox_rules_append(rs, &p);             // the file's passes, after the others
 *     ox_optimize(g, &p, &checks, trace, &res, &d2);
 *     ox_pipeline_free(&p);                // the pipeline borrows from rs:
 *     ox_rules_free(rs);                   // free rs only after the last run using p
 *
 * A rule set is immutable once loaded: several runs (threads) may use it at once. Reloading
 * after an edit = loading a new set, building a new pipeline with it, and freeing the old
 * set once no run uses the old pipeline.
 */
#ifndef OX_RULES_H
#define OX_RULES_H

#include "ir/ox_diag.h"
#include "passes/ox_batch.h"
#include "passes/ox_pass.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OxRuleSet OxRuleSet;

/* Loads and compiles a rule file. Diagnostics are located in `path` (d->file is set to path
 * when it is NULL). Returns 0 and *out, or -1 (errors in d, *out = NULL, nothing loaded). */
int ox_rules_load(const char *path, OxRuleSet **out, OxDiagList *d);
/* The same from a buffer; path names the file in messages and in trace steps. */
int ox_rules_load_buffer(const char *text, size_t len, const char *path, OxRuleSet **out, OxDiagList *d);
void ox_rules_free(OxRuleSet *rs); /* NULL is a no-op */

/* The file the set was loaded from (as given). */
const char *ox_rules_file(const OxRuleSet *rs);

/* Passes, in file order: a `pass` block, a standalone `rule` (a pass of its own, named after
 * the rule) or a `batch` rule (a pass named after it). The OxPassInfo is owned by rs. */
uint32_t ox_rules_pass_count(const OxRuleSet *rs);
const OxPassInfo *ox_rules_pass(const OxRuleSet *rs, uint32_t i);
/* Options a pass starts with: PyTorch's defaults, with a batch rule's min_fuse_set_size,
 * max_fuse_set_size and max_fuse_search_depth from the file. */
void ox_rules_pass_options(const OxRuleSet *rs, uint32_t i, OxPassOptions *out);
/* The batch row a `batch` pass runs (the same struct as the built-in rows), NULL for a
 * pattern pass. */
const OxBatchRule *ox_rules_pass_batch(const OxRuleSet *rs, uint32_t i);
/* Appends every pass of rs to p (with its options). p borrows from rs. */
void ox_rules_append(const OxRuleSet *rs, OxPipeline *p);
/* The rule set a pass belongs to, or NULL for a built-in pass. */
const OxRuleSet *ox_rules_of_pass(const OxPassInfo *pass);

/* Rules, in file order (for rule lists in front ends). */
typedef struct OxRuleInfo {
  const char *name; /* the step's rule name */
  const char *pass; /* the pass it runs in */
  const char *file;
  uint32_t line, col; /* where `rule NAME` / `batch NAME` is written */
  bool batch;
} OxRuleInfo;

uint32_t ox_rules_count(const OxRuleSet *rs);
void ox_rules_info(const OxRuleSet *rs, uint32_t i, OxRuleInfo *out);

#ifdef __cplusplus
}
#endif
#endif
