/* ox-application.h - the optimus-debugger GtkApplication: command line
 * `optimus-debugger [GRAPH [TRACE]]`, app actions (about, quit, new window) and accelerators.
 */
#ifndef OX_APPLICATION_H
#define OX_APPLICATION_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define OX_APPLICATION_ID "io.github.optimus.Debugger"
#define OX_TYPE_APPLICATION (ox_application_get_type())
G_DECLARE_FINAL_TYPE(OxApplication, ox_application, OX, APPLICATION, GtkApplication)

OxApplication *ox_application_new(void);
/* Installs the Ctrl accelerators of the win.* and app.* actions (also used by tests). */
void ox_application_set_accels(GtkApplication *app);

G_END_DECLS
#endif
