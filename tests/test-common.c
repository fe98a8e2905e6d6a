/* test-common.c - helpers shared by test programs: where the real corpus is. */
#include "test-common.h"

char *test_corpus_dir(void) {
  const char *shared = g_getenv("OPTIMUS_SHARED");
  char *base;
  if (shared && *shared) {
    base = g_strdup(shared);
  } else {
    const char *root = g_getenv("OPTIMUS_SOURCE_ROOT");
    base = g_build_filename(root && *root ? root : ".", "..", "shared", NULL);
  }
  char *dir = g_build_filename(base, "corpus", "fx-real", NULL);
  g_free(base);
  return dir;
}

/* Path of corpus file number nn, or NULL after marking the test skipped. */
char *test_corpus_file_or_skip(int nn) {
  char *dir = test_corpus_dir();
  GDir *dh = g_dir_open(dir, 0, NULL);
  char *path = NULL;
  if (dh) {
    char prefix[8];
    g_snprintf(prefix, sizeof prefix, "%02d-", nn);
    const char *e;
    while ((e = g_dir_read_name(dh)))
      if (g_str_has_prefix(e, prefix)) path = g_build_filename(dir, e, NULL);
    g_dir_close(dh);
  }
  if (!path) {
    char *msg = g_strdup_printf("corpus file %02d not found in %s (set OPTIMUS_SHARED)", nn, dir);
    g_test_skip(msg);
    g_free(msg);
  }
  g_free(dir);
  return path;
}

OxDoc *test_corpus_load(int nn, const char *what, char **path_out) {
  *path_out = test_corpus_file_or_skip(nn);
  if (!*path_out) return NULL;
  OxDiagList d;
  ox_diags_init(&d, *path_out);
  OxDoc *doc = NULL;
  if (ox_load_file(*path_out, OX_FMT_UNKNOWN, NULL, &doc, &d) != 0) {
    ox_diags_print(&d, stderr);
    g_test_fail_printf("corpus file %s does not load, so %s cannot run", *path_out, what);
    ox_diags_clear(&d);
    return NULL;
  }
  ox_diags_clear(&d);
  return doc;
}
