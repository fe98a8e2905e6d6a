/* optimus-debugger - the GTK 4 rewrite debugger: `optimus-debugger [GRAPH [TRACE]]`.
 * Everything lives in ui/ (OxApplication, OxWindow, OxDocument); docs/debugger.md is the manual. */
#include "ox-application.h"

int main(int argc, char **argv) {
  OxApplication *app = ox_application_new();
  int status = g_application_run(G_APPLICATION(app), argc, argv);
  g_object_unref(app);
  return status;
}
