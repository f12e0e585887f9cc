// The most recent results, newest first, as thumbnails along the window's bottom edge, seen from every
// tab: hovering one plays its kept frames, clicking it plays the run in the Player (the History's Play).
// It follows the History: a run that finishes (or is deleted) shows (or goes) at once.
#pragma once
#include <QListWidget>

#include "gui/results/history.h"

namespace studio::gui {

class RecentStrip : public QListWidget {
  Q_OBJECT
 public:
  static constexpr int shown = 8;
  RecentStrip(History* history, QWidget* parent);
  void refresh();

 private:
  History* history_;
};

}  // namespace studio::gui
