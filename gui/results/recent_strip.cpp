#include "gui/results/recent_strip.h"

#include <QPixmap>

#include "gui/results/hover_play.h"

namespace studio::gui {

RecentStrip::RecentStrip(History* history, QWidget* parent) : QListWidget(parent), history_(history) {
  setObjectName("recent_strip");
  setViewMode(QListView::IconMode);
  setFlow(QListView::LeftToRight);
  setWrapping(false);
  setMovement(QListView::Static);
  setIconSize(QSize(120, 68));
  setGridSize(QSize(132, 76));
  setFixedHeight(gridSize().height() + 2 * frameWidth());  // 8 fit across; a narrow window scrolls them
  setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setSelectionMode(QAbstractItemView::NoSelection);
  setToolTip(tr("Recent results: hover to play, click to open in the Player"));
  new HoverPlay(this);
  connect(this, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    if (auto r = history_->run(item->data(Qt::UserRole).toLongLong())) Q_EMIT history_->play(*r);
  });
  connect(history, &History::refreshed, this, &RecentStrip::refresh);
  hide();  // until the History has runs
}

void RecentStrip::refresh() {
  clear();
  auto runs = history_->runs();  // newest first
  if (runs.size() > size_t(shown)) runs.resize(size_t(shown));
  for (const auto& r : runs) {
    // A run that made no frame (failed before decoding) has no picture: its tile says how it ended.
    auto* item = r.thumbnail.isNull()
                     ? new QListWidgetItem(r.status)
                     : new QListWidgetItem(QIcon(QPixmap::fromImage(r.thumbnail.scaled(iconSize(), Qt::KeepAspectRatio))), {});
    item->setData(Qt::UserRole, r.id);
    item->setData(HoverPlay::folder_role, r.folder);
    item->setToolTip(QString("%1\n%2 · %3").arg(r.prompt, r.created, r.status));
    addItem(item);
  }
  setVisible(!runs.empty());
}

}  // namespace studio::gui
