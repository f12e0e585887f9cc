#include "gui/history.h"

#include <QBuffer>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSqlError>
#include <QSqlQuery>
#include <QUuid>
#include <QVBoxLayout>

namespace studio::gui {

History::History(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  notice = new QLabel;
  notice->setObjectName("history_notice");
  notice->setWordWrap(true);
  notice->setStyleSheet("color: #b00020");
  notice->hide();
  layout->addWidget(notice);
  table = new QTableWidget(0, 7);
  table->setObjectName("history");
  table->setHorizontalHeaderLabels({tr(""), tr("When"), tr("Prompt"), tr("Seed"), tr("Status"), tr("s/step"), tr("Peak GiB")});
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::ExtendedSelection);  // two rows to compare
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->horizontalHeader()->setStretchLastSection(true);
  table->verticalHeader()->setDefaultSectionSize(52);
  layout->addWidget(table);
  auto* buttons = new QHBoxLayout;
  reopen_button = new QPushButton(tr("Open its settings"));
  rerun_button = new QPushButton(tr("Run again"));
  compare_button = new QPushButton(tr("Compare two"));
  delete_button = new QPushButton(tr("Delete"));
  for (auto* b : {reopen_button, rerun_button, compare_button, delete_button}) buttons->addWidget(b);
  layout->addLayout(buttons);
  connect(reopen_button, &QPushButton::clicked, this, [this] {
    if (auto* r = selected()) Q_EMIT reopen(*r);
  });
  connect(rerun_button, &QPushButton::clicked, this, [this] {
    if (auto* r = selected()) Q_EMIT rerun(*r);
  });
  connect(compare_button, &QPushButton::clicked, this, [this] {
    const auto rows = table->selectionModel()->selectedRows();
    if (rows.size() == 2)
      Q_EMIT compare(shown_[size_t(rows[0].row())], shown_[size_t(rows[1].row())]);
  });
  connect(delete_button, &QPushButton::clicked, this, [this] {
    if (auto* r = selected()) remove(r->id);
  });
}

History::~History() {
  if (connection_.isEmpty()) return;
  QSqlDatabase::database(connection_).close();
  QSqlDatabase::removeDatabase(connection_);
}

bool History::open(const QString& path, QString* error) {
  QDir().mkpath(QFileInfo(path).absolutePath());
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
  if (!q.exec("SELECT id, created, prompt, seed, settings, status, folder, seconds, mean_step, peak_gib, bytes, "
              "thumbnail, steps FROM runs LIMIT 1"))
    return failed(tr("The history %1 is not DiT Studio's: %2.").arg(path, q.lastError().text()));
  refresh();
  return true;
}

qint64 History::add(const RunRecord& r) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("INSERT INTO runs (created, prompt, seed, settings, status, folder, seconds, mean_step, peak_gib, bytes, "
            "thumbnail, steps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  QByteArray png;
  QBuffer buf(&png);
  if (!r.thumbnail.isNull()) r.thumbnail.save(&buf, "PNG");
  for (const QVariant& v : {QVariant(r.created), QVariant(r.prompt), QVariant(r.seed), QVariant(r.settings),
                            QVariant(r.status), QVariant(r.folder), QVariant(r.seconds), QVariant(r.mean_step_seconds),
                            QVariant(r.peak_gib), QVariant(r.bytes_moved), QVariant(png), QVariant(r.steps)})
    q.addBindValue(v);
  if (!q.exec()) return 0;
  const qint64 id = q.lastInsertId().toLongLong();
  refresh();
  return id;
}

std::vector<RunRecord> History::runs() const {
  std::vector<RunRecord> out;
  QSqlQuery q("SELECT id, created, prompt, seed, settings, status, folder, seconds, mean_step, peak_gib, bytes, "
              "thumbnail, steps FROM runs ORDER BY id DESC",
              QSqlDatabase::database(connection_));
  while (q.next()) {
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
    out.push_back(r);
  }
  return out;
}

bool History::remove(qint64 id) {
  QString folder;
  for (const auto& r : runs())
    if (r.id == id) folder = r.folder;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("DELETE FROM runs WHERE id = ?");
  q.addBindValue(id);
  const bool ok = q.exec();
  if (ok && !folder.isEmpty()) QDir(folder).removeRecursively();
  refresh();
  return ok;
}

void History::refresh() {
  shown_ = runs();
  table->setRowCount(int(shown_.size()));
  for (int i = 0; i < int(shown_.size()); ++i) {
    const auto& r = shown_[size_t(i)];
    auto* thumb = new QTableWidgetItem;
    if (!r.thumbnail.isNull()) thumb->setData(Qt::DecorationRole, QPixmap::fromImage(r.thumbnail.scaledToHeight(48)));
    table->setItem(i, 0, thumb);
    const QStringList cells{r.created, r.prompt, QString::number(r.seed), r.status,
                            QString::number(r.mean_step_seconds, 'f', 2), QString::number(r.peak_gib, 'f', 2)};
    for (int c = 0; c < cells.size(); ++c) table->setItem(i, c + 1, new QTableWidgetItem(cells[c]));
  }
}

const RunRecord* History::selected() const {
  const int row = table->currentRow();
  return row >= 0 && row < int(shown_.size()) ? &shown_[size_t(row)] : nullptr;
}

}  // namespace studio::gui
