// Rows of forms that come and go with the model (FLUX.1's T5 prompt, a clip model's negative prompt, frames).
// Qt 6.4's QFormLayout::setRowVisible lays a row out at no height when it is shown again in some orders of hiding
// and showing (FLUX.1's T5 prompt stayed invisible after the studio started on a clip model, though isVisible()
// said otherwise), so a row that goes is taken out of its form and one that comes is put back in its place: a form
// lays out only the rows it has.
#pragma once
#include <QFormLayout>
#include <QWidget>

#include <vector>

namespace studio::gui {

class FormRows {
 public:
  // Registers the row of `field`, in `form` now, as one that comes and goes (in the order the rows were added).
  void add(QFormLayout* form, QWidget* field);
  // Puts the row of `field` in its form, in its place among the others, or takes it out.
  void show(QWidget* field, bool on);

 private:
  struct Row {
    QFormLayout* form;
    QWidget* label;  // null for a row that spans the form
    QWidget* field;
    bool spans;
    int index;  // its row in the form when every row is in
    bool in = true;
  };
  std::vector<Row> rows_;
};

}  // namespace studio::gui
