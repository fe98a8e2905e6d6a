/* ui-test-pass.h - the test pass shared by the UI tests (test-ui-model.c, test-ui.c). */
#ifndef UI_TEST_PASS_H
#define UI_TEST_PASS_H

#include <glib.h>

#include "passes/ox_pass.h"

/* A one-pass pipeline running the test pass (g_new0'd; the caller frees it as the UI does). */
OxPipeline *ui_test_pipeline(void);
/* Called with the graph after each applied step, when set. */
extern void (*ui_test_on_applied)(const OxGraph *g);

#endif
