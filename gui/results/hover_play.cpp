#include "gui/results/hover_play.h"

#include <QPixmap>

#include "gui/results/compare_view.h"

namespace studio::gui {

HoverPlay::HoverPlay(QListWidget* list) : QObject(list), list_(list) {
  list->setMouseTracking(true);  // itemEntered without a button held
  connect(list, &QListWidget::itemEntered, this, &HoverPlay::hover);
  connect(&timer_, &QTimer::timeout, this, &HoverPlay::tick);
}

QListWidgetItem* HoverPlay::playing() const {
  for (int i = 0; id_ && i < list_->count(); ++i)
    if (list_->item(i)->data(Qt::UserRole).toLongLong() == id_) return list_->item(i);
  return nullptr;
}

void HoverPlay::restore() {
  if (auto* item = playing()) item->setIcon(still_);
  id_ = 0;
  frames_.clear();
  timer_.stop();
}

void HoverPlay::tick() {
  if (!list_->isVisible() || !list_->viewport()->underMouse()) return restore();
  if (auto* item = playing(); item && !frames_.empty()) {
    frame_ = (frame_ + 1) % int(frames_.size());
    item->setIcon(QIcon(QPixmap::fromImage(frames_[size_t(frame_)])));
  }
}

void HoverPlay::hover(QListWidgetItem* item) {
  const qint64 id = item->data(Qt::UserRole).toLongLong();
  if (id == id_) return;
  restore();
  const QString folder = item->data(folder_role).toString();
  if (folder.isEmpty()) return;
  for (const QImage& f : load_frames(folder)) frames_.push_back(f.scaled(list_->iconSize(), Qt::KeepAspectRatio));
  if (frames_.size() < 2) return frames_.clear();
  id_ = id;
  still_ = item->icon();
  frame_ = 0;
  timer_.start(125);
}

}  // namespace studio::gui
