/* test-common.h - helpers shared by test programs. */
#ifndef OX_TEST_COMMON_H
#define OX_TEST_COMMON_H

#include <glib.h>

#include "load/ox_load.h"

/* ../shared/corpus/fx-real (OPTIMUS_SHARED, else beside OPTIMUS_SOURCE_ROOT); caller frees. */
char *test_corpus_dir(void);
/* Path of corpus file number nn, or NULL after marking the test skipped (never a pass). */
char *test_corpus_file_or_skip(int nn);

/* Loads corpus file number nn (*path_out set, caller frees). NULL when the corpus is absent
 * (test marked skipped) or the file does not load (test failed, saying that `what` cannot run). */
OxDoc *test_corpus_load(int nn, const char *what, char **path_out);

#endif
