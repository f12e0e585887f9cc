// Hovering a run's thumbnail in a list of runs (a QListWidget whose items hold the run's id in
// Qt::UserRole and its folder in HoverPlay::folder_role) plays the run's kept frames in it; leaving the
// list puts the thumbnail back. Shared by the History's gallery and the recent results strip. The frames load on a
// thread of their own (a long run's take a good part of a second), the last few runs' kept for the next hover.
#pragma once
#include <QIcon>
#include <QImage>
#include <QListWidget>
#include <QTimer>

#include <deque>
#include <utility>
#include <vector>

#include "gui/widgets/latest_task.h"

namespace studio::gui {

class HoverPlay : public QObject {
 public:
  static constexpr int folder_role = Qt::UserRole + 1;
  explicit HoverPlay(QListWidget* list);  // owned by the list

 private:
  void hover(QListWidgetItem* item);
  void play(const std::vector<QImage>& frames);  // the hovered run's icon frames, loaded
  void tick();
  void restore();
  QListWidgetItem* playing() const;  // by id: the list may have been refilled since
  QListWidget* list_;
  QTimer timer_;
  qint64 id_ = 0;
  QIcon still_;
  std::vector<QImage> frames_;
  int frame_ = 0;
  LatestTask* loader_;
  std::deque<std::pair<qint64, std::vector<QImage>>> kept_;  // the last runs' icon frames, newest first
};

}  // namespace studio::gui
