#include "gui/widgets/form_rows.h"

#include <stdexcept>

namespace studio::gui {

void FormRows::add(QFormLayout* form, QWidget* field) {
  int row = -1;
  QFormLayout::ItemRole role;
  form->getWidgetPosition(field, &row, &role);
  if (row < 0) throw std::logic_error("FormRows::add: the field is not in the form");
  const bool spans = role == QFormLayout::SpanningRole;
  rows_.push_back({form, spans ? nullptr : form->labelForField(field), field, spans, row});
}

void FormRows::show(QWidget* field, bool on) {
  for (auto& r : rows_) {
    if (r.field != field || r.in == on) continue;
    if (!on) {
      const auto taken = r.form->takeRow(field);  // the widgets stay the section's, hidden; the items go
      delete taken.labelItem;
      delete taken.fieldItem;
      if (r.label) r.label->hide();
      field->hide();
    } else {
      int at = r.index;  // less the rows before it that are out
      for (const auto& o : rows_)
        if (o.form == r.form && !o.in && o.index < r.index) --at;
      if (r.spans) r.form->insertRow(at, field);
      else r.form->insertRow(at, r.label, field);
      if (r.label) r.label->show();
      field->show();
    }
    r.in = on;
  }
}

}  // namespace studio::gui
