#include "gui/results/history.h"

#include <algorithm>

#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMessageBox>
#include <QSqlError>
#include <QSqlQuery>
#include <QUuid>
#include <QVBoxLayout>

#include "gui/results/compare_view.h"
#include "gui/results/hover_play.h"
#include "gui/widgets/open_folder.h"
#include "gui/results/run_info.h"

namespace studio::gui {

namespace {

// "Deleted one run", "Deleted 3 runs" (the studio has no translations to pick a plural from).
QString runs_text(const QString& verb, size_t n) {
  return n == 1 ? QObject::tr("%1 one run").arg(verb) : QObject::tr("%1 %2 runs").arg(verb).arg(n);
}

const char* kColumns = "id, created, prompt, seed, settings, status, folder, seconds, mean_step, peak_gib, bytes, "
                       "thumbnail, steps";

RunRecord read_record(const QSqlQuery& q) {
  RunRecord r;
  r.id = q.value(0).toLongLong();
  r.created = q.value(1).toString();
  r.prompt = q.value(2).toString();
  r.seed = q.value(3).toLongLong();
  r.settings = q.value(4).toString();
  r.status = q.value(5).toString();
  r.folder = q.value(6).toString();
  r.seconds = q.value(7).toDouble();
  r.mean_step_seconds = q.value(8).toDouble();
  r.peak_gib = q.value(9).toDouble();
  r.bytes_moved = q.value(10).toLongLong();
  r.thumbnail.loadFromData(q.value(11).toByteArray(), "PNG");
  r.steps = q.value(12).toString();
  return r;
}

// The list's cells after the thumbnail: when, prompt, model, size, frames, steps, configuration, total
// time, time per step, peak memory, seed, status.
QStringList cells_of(const RunRecord& r) {
  QString model, size, frames, steps, config;
  if (const auto f = job_of(r.settings)) {
    const auto& j = f->job;
    model = QFileInfo(QString::fromStdString(j.model_dir)).fileName();
    if (j.width > 0) size = QString("%1 x %2").arg(j.width).arg(j.height);
    frames = makes_clips(j) && j.num_frames > 0 ? QString::number(j.num_frames) : QObject::tr("image");
    if (j.num_inference_steps > 0) steps = QString::number(j.num_inference_steps);
    config = short_label(f->parallel);
  }
  const QDateTime when = QDateTime::fromString(r.created, Qt::ISODate);
  return {when.isValid() ? when.toString("yyyy-MM-dd hh:mm") : r.created,
          r.prompt,
          model,
          size,
          frames,
          steps,
          config,
          duration_text(r.seconds),
          QString::number(r.mean_step_seconds, 'f', 2),
          QString::number(r.peak_gib, 'f', 2),
          QString::number(r.seed),
          r.status};
}

}  // namespace

History::History(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  notice = new QLabel;
  notice->setObjectName("history_notice");
  notice->setWordWrap(true);
  notice->setStyleSheet("color: #b00020");
  notice->hide();
  layout->addWidget(notice);
  auto* top = new QHBoxLayout;
  search = new QLineEdit;
  search->setObjectName("history_search");
  search->setPlaceholderText(tr("Search the prompts…"));
  search->setClearButtonEnabled(true);
  top->addWidget(search, 1);
  list_button = new QPushButton(tr("List"));
  gallery_button = new QPushButton(tr("Gallery"));
  for (auto* b : {list_button, gallery_button}) {
    b->setCheckable(true);
    b->setAutoExclusive(true);
    top->addWidget(b);
  }
  list_button->setChecked(true);
  layout->addLayout(top);

  const QStringList headers{"",          tr("When"),  tr("Prompt"), tr("Model"),    tr("Size"), tr("Frames"),
                            tr("Steps"), tr("Configuration"), tr("Total"), tr("s/step"), tr("Peak GiB"),
                            tr("Seed"),  tr("Status")};
  table = new QTableWidget(0, int(headers.size()));
  table->setObjectName("history");
  table->setHorizontalHeaderLabels(headers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::ExtendedSelection);  // two rows to compare
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setWordWrap(false);
  table->verticalHeader()->setDefaultSectionSize(52);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Interactive);
  table->viewport()->installEventFilter(this);
  table->setIconSize(QSize(72, 48));
  gallery = new QListWidget;
  gallery->setObjectName("gallery");
  gallery->setViewMode(QListView::IconMode);
  gallery->setIconSize(QSize(192, 128));
  gallery->setGridSize(QSize(212, 176));
  gallery->setResizeMode(QListView::Adjust);
  gallery->setMovement(QListView::Static);
  gallery->setWordWrap(true);
  gallery->setSelectionMode(QAbstractItemView::ExtendedSelection);
  new HoverPlay(gallery);  // hovering a thumbnail plays its run
  views = new QStackedWidget;
  views->addWidget(table);
  views->addWidget(gallery);
  layout->addWidget(views, 1);

  auto* buttons = new QHBoxLayout;
  play_button = new QPushButton(tr("Play"));
  play_button->setToolTip(tr("Load the run into the Player"));
  folder_button = new QPushButton(tr("Open folder"));
  folder_button->setToolTip(tr("Show the run's files (the clip, its settings and its frames)"));
  export_button = new QPushButton(tr("Export…"));
  reopen_button = new QPushButton(tr("Open its settings"));
  reopen_button->setToolTip(tr("Put the run's settings back in the panel on the left"));
  rerun_button = new QPushButton(tr("Run again"));
  rerun_button->setToolTip(tr("Run the same settings with the same seed"));
  compare_button = new QPushButton(tr("Compare two"));
  compare_button->setToolTip(tr("Select two runs (Ctrl+click) to compare their settings, timings and frames"));
  delete_button = new QPushButton(tr("Delete…"));
  undo_button = new QPushButton(tr("Undo delete"));
  undo_button->setEnabled(false);
  for (auto* b : {play_button, folder_button, export_button, reopen_button, rerun_button, compare_button,
                  delete_button, undo_button})
    buttons->addWidget(b);
  layout->addLayout(buttons);
  status = new QLabel;
  status->setObjectName("history_status");
  status->setWordWrap(true);
  layout->addWidget(status);

  connect(list_button, &QPushButton::toggled, this, [this](bool on) { views->setCurrentWidget(on ? static_cast<QWidget*>(table) : gallery); });
  connect(search, &QLineEdit::textChanged, this, &History::refresh);
  connect(table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { sync_selection(table); });
  connect(gallery, &QListWidget::itemSelectionChanged, this, [this] { sync_selection(gallery); });
  connect(table, &QTableWidget::cellDoubleClicked, this, [this] {
    if (auto r = selected()) Q_EMIT play(*r);
  });
  connect(gallery, &QListWidget::itemActivated, this, [this] {
    if (auto r = selected()) Q_EMIT play(*r);
  });
  connect(play_button, &QPushButton::clicked, this, [this] {
    if (auto r = selected()) Q_EMIT play(*r);
  });
  connect(folder_button, &QPushButton::clicked, this, [this] {
    if (auto r = selected(); r && !r->folder.isEmpty())
      if (const QString why = open_folder(r->folder); !why.isEmpty()) status->setText(why);
  });
  connect(export_button, &QPushButton::clicked, this, [this] {
    if (auto r = selected()) Q_EMIT export_run(*r);
  });
  connect(reopen_button, &QPushButton::clicked, this, [this] {
    if (auto r = selected()) Q_EMIT reopen(*r);
  });
  connect(rerun_button, &QPushButton::clicked, this, [this] {
    if (auto r = selected()) Q_EMIT rerun(*r);
  });
  connect(compare_button, &QPushButton::clicked, this, [this] {
    const auto ids = selected_ids();
    if (ids.size() != 2) return;
    const auto a = run(ids[1]), b = run(ids[0]);  // A the older
    if (a && b) Q_EMIT compare(*a, *b);
  });
  connect(delete_button, &QPushButton::clicked, this, &History::delete_selected);
  connect(undo_button, &QPushButton::clicked, this, &History::undo);
  sync_selection(nullptr);
}

History::~History() {
  for (const auto& removal : trashed_)
    for (const auto& t : removal)
      if (!t.in_trash.isEmpty()) QDir(t.in_trash).removeRecursively();
  if (!db_path_.isEmpty()) QDir(trash_dir()).removeRecursively();
  if (connection_.isEmpty()) return;
  QSqlDatabase::database(connection_).close();
  QSqlDatabase::removeDatabase(connection_);
}

QString History::trash_dir() const { return QFileInfo(db_path_).absolutePath() + "/trash"; }

bool History::open(const QString& path, QString* error) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  db_path_ = path;
  connection_ = "history-" + QUuid::createUuid().toString();
  QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", connection_);
  db.setDatabaseName(path);
  auto failed = [&](const QString& why) {
    *error = why + tr(" New runs are not recorded; move the file away to start a new history.");
    notice->setText(*error);
    notice->show();
    return false;
  };
  if (!db.open()) return failed(tr("Cannot open the history %1: %2.").arg(path, db.lastError().text()));
  QSqlQuery q(db);
  if (!q.exec("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT, prompt TEXT, "
              "seed INTEGER, settings TEXT, status TEXT, folder TEXT, seconds REAL, mean_step REAL, peak_gib REAL, "
              "bytes INTEGER, thumbnail BLOB, steps TEXT)"))
    return failed(tr("Cannot use the history %1: %2.").arg(path, q.lastError().text()));
  // A table of another shape (an edited or foreign file) is refused rather than read wrongly.
  if (!q.exec(QString("SELECT %1 FROM runs LIMIT 1").arg(kColumns)))
    return failed(tr("The history %1 is not DiT Studio's: %2.").arg(path, q.lastError().text()));
  refresh();
  return true;
}

qint64 History::add(const RunRecord& r) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  // A record brought back by undo keeps its id.
  q.prepare(QString("INSERT INTO runs (%1) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").arg(kColumns));
  QByteArray png;
  QBuffer buf(&png);
  if (!r.thumbnail.isNull()) r.thumbnail.save(&buf, "PNG");
  for (const QVariant& v : {r.id > 0 ? QVariant(r.id) : QVariant(), QVariant(r.created), QVariant(r.prompt),
                            QVariant(r.seed), QVariant(r.settings), QVariant(r.status), QVariant(r.folder),
                            QVariant(r.seconds), QVariant(r.mean_step_seconds), QVariant(r.peak_gib),
                            QVariant(r.bytes_moved), QVariant(png), QVariant(r.steps)})
    q.addBindValue(v);
  if (!q.exec()) return 0;
  const qint64 id = q.lastInsertId().toLongLong();
  refresh();
  return id;
}

std::vector<RunRecord> History::runs() const {
  std::vector<RunRecord> out;
  QSqlQuery q(QString("SELECT %1 FROM runs ORDER BY id DESC").arg(kColumns), QSqlDatabase::database(connection_));
  while (q.next()) out.push_back(read_record(q));
  return out;
}

std::optional<RunRecord> History::run(qint64 id) const {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QString("SELECT %1 FROM runs WHERE id = ?").arg(kColumns));
  q.addBindValue(id);
  if (!q.exec() || !q.next()) return std::nullopt;
  return read_record(q);
}

bool History::remove(const std::vector<qint64>& ids) {
  std::vector<Trashed> removal;
  bool ok = true;
  for (qint64 id : ids) {
    auto r = run(id);
    if (!r) continue;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("DELETE FROM runs WHERE id = ?");
    q.addBindValue(id);
    if (!q.exec()) {
      ok = false;
      continue;
    }
    // The files go to the trash: under the data folder, else (another disk) beside the run's folder.
    Trashed t{*r, {}};
    if (!r->folder.isEmpty() && QDir(r->folder).exists()) {
      const QString name = QString("%1-%2").arg(id).arg(QFileInfo(r->folder).fileName());
      QDir().mkpath(trash_dir());
      QString to = trash_dir() + "/" + name;
      if (!QDir().rename(r->folder, to)) {
        to = QFileInfo(r->folder).absolutePath() + "/.trash-" + name;
        if (!QDir().rename(r->folder, to)) to.clear();
      }
      t.in_trash = to;
    }
    removal.push_back(t);
  }
  if (!removal.empty()) {
    trashed_.push_back(removal);
    const bool files = std::any_of(removal.begin(), removal.end(), [](const Trashed& t) { return !t.in_trash.isEmpty(); });
    status->setText(runs_text(tr("Deleted"), removal.size()) +
                    (!files ? (removal.size() == 1 ? tr(" (its folder was already gone): Undo brings its record back.")
                                                   : tr(" (their folders were already gone): Undo brings their records "
                                                        "back."))
                     : removal.size() == 1
                         ? tr(". Its files are kept in the trash until the studio closes: Undo brings it back.")
                         : tr(". Their files are kept in the trash until the studio closes: Undo brings them back.")));
  }
  undo_button->setEnabled(!trashed_.empty());
  refresh();
  return ok && !removal.empty();
}

bool History::undo() {
  if (trashed_.empty()) return false;
  const auto removal = trashed_.back();
  trashed_.pop_back();
  bool ok = true;
  std::vector<qint64> ids;
  for (const auto& t : removal) {
    if (!t.in_trash.isEmpty() && !QDir().rename(t.in_trash, t.record.folder)) ok = false;
    ok = add(t.record) > 0 && ok;
    ids.push_back(t.record.id);
  }
  const bool files = std::any_of(removal.begin(), removal.end(), [](const Trashed& t) { return !t.in_trash.isEmpty(); });
  status->setText(ok ? runs_text(tr("Restored"), removal.size()) +
                           (!files                ? tr(".")
                            : removal.size() == 1 ? tr(" with its files.")
                                                  : tr(" with their files."))
                     : tr("Restored the records, but some files could not be moved back."));
  undo_button->setEnabled(!trashed_.empty());
  refresh();
  select(ids);
  return ok;
}

void History::delete_selected() {
  const auto ids = selected_ids();
  if (ids.empty()) return;
  QMessageBox box(QMessageBox::Question, tr("Delete runs"),
                  runs_text(tr("Delete"), ids.size()) +
                      (ids.size() == 1 ? tr(" and its files? Undo brings it back until the studio closes.")
                                       : tr(" and their files? Undo brings them back until the studio closes.")),
                  QMessageBox::Yes | QMessageBox::No, this);
  box.setObjectName("confirm_delete");
  box.button(QMessageBox::Yes)->setText(tr("Delete"));
  box.button(QMessageBox::No)->setText(tr("Keep them"));
  box.setDefaultButton(QMessageBox::No);
  if (box.exec() == QMessageBox::Yes) remove(ids);
}

void History::refresh() {
  const auto keep = selected_ids();
  shown_.clear();
  for (auto& r : runs())
    if (r.prompt.contains(search->text(), Qt::CaseInsensitive)) shown_.push_back(std::move(r));
  syncing_ = true;
  table->setRowCount(int(shown_.size()));
  gallery->clear();
  for (int i = 0; i < int(shown_.size()); ++i) {
    const auto& r = shown_[size_t(i)];
    auto* thumb = new QTableWidgetItem;
    thumb->setData(Qt::UserRole, r.id);
    if (!r.thumbnail.isNull()) thumb->setData(Qt::DecorationRole, QPixmap::fromImage(r.thumbnail.scaledToHeight(48)));
    table->setItem(i, 0, thumb);
    const QStringList cells = cells_of(r);
    for (int c = 0; c < cells.size(); ++c) table->setItem(i, c + 1, new QTableWidgetItem(cells[c]));
    table->item(i, 2)->setToolTip(r.prompt);
    auto* tile = new QListWidgetItem(QIcon(QPixmap::fromImage(r.thumbnail)),
                                     QString("%1\n%2 · %3").arg(r.prompt.left(48), cells[6], r.status));
    tile->setData(Qt::UserRole, r.id);
    tile->setData(HoverPlay::folder_role, r.folder);
    tile->setToolTip(r.prompt);
    gallery->addItem(tile);
  }
  syncing_ = false;
  select(keep);
  fit_prompt_column();
  Q_EMIT refreshed();
}

bool History::eventFilter(QObject* watched, QEvent* e) {
  if (watched == table->viewport() && e->type() == QEvent::Resize) fit_prompt_column();
  return QWidget::eventFilter(watched, e);
}

void History::fit_prompt_column() {
  // Where the columns do not fit beside a readable prompt, those least needed at a glance give way, in this
  // order (seed, peak memory, total time, frames, model; the run's settings still say them all), rather than
  // a horizontal scrollbar.
  constexpr int kPrompt = 2, kReadablePrompt = 220, kGiveWay[] = {11, 10, 8, 5, 3};
  const auto others = [this] {
    int sum = 0;
    for (int c = 0; c < table->columnCount(); ++c)
      if (c != kPrompt && !table->isColumnHidden(c)) sum += table->columnWidth(c);
    return sum;
  };
  for (int c : kGiveWay) table->setColumnHidden(c, false);
  const int room = table->viewport()->width();
  for (int c : kGiveWay) {
    if (others() + kReadablePrompt <= room) break;
    table->setColumnHidden(c, true);
  }
  table->setColumnWidth(kPrompt, std::max(kReadablePrompt, room - others()));
}

std::vector<qint64> History::selected_ids() const {
  std::vector<qint64> ids;
  for (int i = 0; i < table->rowCount(); ++i)
    if (table->item(i, 0) && table->item(i, 0)->isSelected()) ids.push_back(table->item(i, 0)->data(Qt::UserRole).toLongLong());
  return ids;
}

void History::select(const std::vector<qint64>& ids) {
  syncing_ = true;
  table->clearSelection();
  gallery->clearSelection();
  for (int i = 0; i < table->rowCount(); ++i) {
    const qint64 id = table->item(i, 0)->data(Qt::UserRole).toLongLong();
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
    table->selectionModel()->select(table->model()->index(i, 0),
                                    QItemSelectionModel::Select | QItemSelectionModel::Rows);
    gallery->item(i)->setSelected(true);
  }
  syncing_ = false;
  sync_selection(nullptr);
}

void History::sync_selection(QObject* from) {
  if (syncing_) return;
  if (from == gallery) {  // the gallery's selection, by id, onto the list
    std::vector<qint64> ids;
    for (auto* item : gallery->selectedItems()) ids.push_back(item->data(Qt::UserRole).toLongLong());
    return select(ids);
  }
  if (from == table) {
    const QSignalBlocker quiet(gallery);
    for (int i = 0; i < gallery->count(); ++i) gallery->item(i)->setSelected(table->item(i, 0)->isSelected());
  }
  const size_t n = selected_ids().size();
  for (auto* b : {play_button, export_button, reopen_button, rerun_button, folder_button}) b->setEnabled(n == 1);
  compare_button->setEnabled(n == 2);
  delete_button->setEnabled(n >= 1);
}

std::optional<RunRecord> History::selected() const {
  const auto ids = selected_ids();
  return ids.size() == 1 ? run(ids.front()) : std::nullopt;
}

}  // namespace studio::gui
