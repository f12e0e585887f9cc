// Every run, kept: its settings (the job file), outcome, figures, a thumbnail and where its files are,
// in a SQLite database (Qt SQL) in the user's data folder; listed, reopened, re-run or deleted from here.
#pragma once
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSqlDatabase>
#include <QTableWidget>
#include <QWidget>

#include <vector>

namespace studio::gui {

struct RunRecord {
  qint64 id = 0;
  QString created, prompt, settings, status, folder;  // settings: the job file's JSON
  QString steps;  // per rank, [[step, seconds, memory GiB], ...], as JSON
  qint64 seed = 0;
  double seconds = 0, mean_step_seconds = 0, peak_gib = 0;
  qint64 bytes_moved = 0;
  QImage thumbnail;
};

class History : public QWidget {
  Q_OBJECT
 public:
  explicit History(QWidget* parent = nullptr);
  ~History() override;
  // Opens (creating it if needed) the database at `path`; false with `error` set when it cannot.
  bool open(const QString& path, QString* error);
  qint64 add(const RunRecord& r);
  std::vector<RunRecord> runs() const;
  // Removes the record and the run's folder.
  bool remove(qint64 id);
  void refresh();

  QLabel* notice;  // why the history cannot be used (a damaged database), shown above the table
  QTableWidget* table;
  QPushButton *reopen_button, *rerun_button, *compare_button, *delete_button;

 Q_SIGNALS:
  void reopen(const studio::gui::RunRecord& r);
  void rerun(const studio::gui::RunRecord& r);
  void compare(const studio::gui::RunRecord& a, const studio::gui::RunRecord& b);

 private:
  const RunRecord* selected() const;
  QString connection_;
  std::vector<RunRecord> shown_;
};

}  // namespace studio::gui
