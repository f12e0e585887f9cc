// Every run, kept: its settings (the job file), outcome, figures, a thumbnail and where its files are,
// in a SQLite database (Qt SQL) in the user's data folder. Shown as a library: a list with the key
// settings as columns, or a gallery of thumbnails that play on hover; searched by prompt. A run is
// played (in the Player), its folder opened, exported, run again, compared with another, or deleted
// (asked first; its files go to a trash folder and come back with Undo until the studio closes).
// The selection is kept by run id, so runs arriving never move it onto other runs.
#pragma once
#include <QCheckBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSqlDatabase>
#include <QStackedWidget>
#include <QTableWidget>
#include <QWidget>

#include <optional>
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
  ~History() override;  // purges the trash: deletes cannot be undone after the studio closes
  // Opens (creating it if needed) the database at `path`; false with `error` set when it cannot.
  bool open(const QString& path, QString* error);
  qint64 add(const RunRecord& r);
  std::vector<RunRecord> runs() const;
  std::optional<RunRecord> run(qint64 id) const;
  // Removes the records and moves the runs' folders to the trash, without asking; undo() brings back the
  // last removal. delete_selected() asks first.
  bool remove(qint64 id) { return remove(std::vector<qint64>{id}); }
  bool remove(const std::vector<qint64>& ids);
  bool undo();
  void delete_selected();
  void refresh();

  std::vector<qint64> selected_ids() const;  // in the order of the runs (newest first)
  void select(const std::vector<qint64>& ids);

  QLabel* notice;  // why the history cannot be used (a damaged database), shown above the table
  QLineEdit* search;  // runs whose prompt contains it
  QPushButton *list_button, *gallery_button;
  QStackedWidget* views;
  QTableWidget* table;   // the list: one row per run, the key settings as columns
  QListWidget* gallery;  // thumbnails
  QPushButton *play_button, *folder_button, *export_button, *reopen_button, *rerun_button, *compare_button,
      *delete_button, *undo_button;
  QLabel* status;  // what the last action did (deleted, restored)

 Q_SIGNALS:
  void play(const studio::gui::RunRecord& r);
  void export_run(const studio::gui::RunRecord& r);
  void reopen(const studio::gui::RunRecord& r);
  void rerun(const studio::gui::RunRecord& r);
  void compare(const studio::gui::RunRecord& a, const studio::gui::RunRecord& b);
  void refreshed();  // the runs were read again (one added, removed or brought back, or a new search)

 private:
  std::optional<RunRecord> selected() const;  // the one run selected
  bool eventFilter(QObject* watched, QEvent* e) override;
  void fit_prompt_column();  // the prompt takes the width the other columns leave
  void sync_selection(QObject* from);
  QString trash_dir() const;
  QString connection_, db_path_;
  std::vector<RunRecord> shown_;
  struct Trashed {
    RunRecord record;
    QString in_trash;  // where its folder is now (empty: it had none)
  };
  std::vector<std::vector<Trashed>> trashed_;  // each removal, for undo
  bool syncing_ = false;
};

}  // namespace studio::gui
