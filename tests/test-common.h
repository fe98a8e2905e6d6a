/* test-common.h - helpers shared by test programs. */
#ifndef OX_TEST_COMMON_H
#define OX_TEST_COMMON_H

#include <glib.h>

/* ../shared/corpus/fx-real (OPTIMUS_SHARED, else beside OPTIMUS_SOURCE_ROOT); caller frees. */
char *test_corpus_dir(void);
/* Path of corpus file number nn, or NULL after marking the test skipped (never a pass). */
char *test_corpus_file_or_skip(int nn);

#endif
