// Hovering a run's thumbnail in a list of runs (a QListWidget whose items hold the run's id in
// Qt::UserRole and its folder in HoverPlay::folder_role) plays the run's kept frames in it; leaving the
// list puts the thumbnail back. Shared by the History's gallery and the recent results strip.
#pragma once
#include <QIcon>
#include <QImage>
#include <QListWidget>
#include <QTimer>

#include <vector>

namespace studio::gui {

class HoverPlay : public QObject {
 public:
  static constexpr int folder_role = Qt::UserRole + 1;
  explicit HoverPlay(QListWidget* list);  // owned by the list

 private:
  void hover(QListWidgetItem* item);
  void tick();
  void restore();
  QListWidgetItem* playing() const;  // by id: the list may have been refilled since
  QListWidget* list_;
  QTimer timer_;
  qint64 id_ = 0;
  QIcon still_;
  std::vector<QImage> frames_;
  int frame_ = 0;
};

}  // namespace studio::gui
