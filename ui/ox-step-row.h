/* ox-step-row.h - one row of the step timeline: a coloured dot, a title and a dimmed subtitle,
 * each one line, ellipsized at the end.
 *
 * Drawn, not made of labels: a list view jumping to a far row (End, a jump to a search hit)
 * binds and measures a whole screenful of new rows, and label rows cost ~50 ms per jump there
 * (each label shapes its full text to measure it). This row's height is fixed by the font, its
 * text is shaped only when it is drawn. */
#ifndef OX_STEP_ROW_H
#define OX_STEP_ROW_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define OX_TYPE_STEP_ROW (ox_step_row_get_type())
G_DECLARE_FINAL_TYPE(OxStepRow, ox_step_row, OX, STEP_ROW, GtkWidget)

GtkWidget *ox_step_row_new(void);
/* header: a pass heading (bold title, no dot). dot: the dot's colour (NULL: none). The texts are
 * copied; they are also the row's accessible label and tooltip. */
void ox_step_row_set(OxStepRow *self, gboolean header, const GdkRGBA *dot, const char *title, const char *subtitle);
const char *ox_step_row_get_title(OxStepRow *self);
const char *ox_step_row_get_subtitle(OxStepRow *self);
/* Title and subtitle on two lines (the subtitle's line only when it is not empty): the row's
 * accessible label, and its tooltip, made when GTK asks for one (query-tooltip). Free it. */
char *ox_step_row_full_text(OxStepRow *self);

G_END_DECLS
#endif
