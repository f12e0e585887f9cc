// A titled group of settings that folds away: a header button with an arrow, and the group's widget.
// A closed group opens when one of its problem labels (ProblemLabels, "problems_...") shows.
#pragma once
#include <QToolButton>
#include <QWidget>

namespace studio::gui {

class Collapsible : public QWidget {
  Q_OBJECT
 public:
  Collapsible(const QString& title, QWidget* content, bool open, QWidget* parent = nullptr);
  void set_open(bool open);
  bool is_open() const { return header->isChecked(); }

  QToolButton* header;
  QWidget* content;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace studio::gui
