#include "gui/results/hover_play.h"

#include <QPixmap>

#include <algorithm>

#include "gui/results/compare_view.h"

namespace studio::gui {

namespace {
constexpr size_t kKeptRuns = 8;  // runs whose icon frames stay for the next hover (small: icon-sized)
}  // namespace

HoverPlay::HoverPlay(QListWidget* list) : QObject(list), list_(list), loader_(new LatestTask(this)) {
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
  id_ = id;
  still_ = item->icon();
  frame_ = 0;
  for (const auto& [kept_id, frames] : kept_)
    if (kept_id == id) return play(frames);
  loader_->start([this, id, folder, fit = list_->iconSize()](const std::function<bool()>& go_on) {
    return [this, id, frames = load_frames(folder, fit, go_on)] {
      if (std::none_of(kept_.begin(), kept_.end(), [id](const auto& k) { return k.first == id; })) {
        kept_.emplace_front(id, frames);
        if (kept_.size() > kKeptRuns) kept_.pop_back();
      }
      if (id == id_) play(frames);
    };
  });
}

void HoverPlay::play(const std::vector<QImage>& frames) {
  if (frames.size() < 2) return;
  frames_ = frames;
  timer_.start(125);
}

}  // namespace studio::gui
