// Where runs are saved: a folder chosen in the studio's settings (Settings > Output folder, Ctrl+,),
// kept between sessions, and checked before each job starts: it must exist, take a file (a real test
// write: a read-only mount shows only then) and have room for the job's frames and clip, each failure
// said with its true reason in the window's words (plan/output_folder.h, the launcher's check too).
#pragma once
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

#include "plan/job.h"

namespace studio::gui {

// The folder runs are saved in: the one chosen, or `data_dir`/runs (made when needed).
QString output_root(const QString& data_dir);
void set_output_root(const QString& folder);  // "" goes back to the default

// The bytes a run of `job` writes in the studio: each frame as a PNG, and the clip or picture.
uint64_t run_output_bytes(const plan::JobSpec& job);

// Whether `root` can take a run of `job`: "" when it can, else why not and what to do, for the window.
QString check_output_root(const QString& root, const plan::JobSpec& job);

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  SettingsDialog(const QString& data_dir, QWidget* parent = nullptr);
  void accept() override;  // keeps the folder (persisted) when it can be written, else says why
  QLineEdit* output_folder;
  QPushButton* browse;
  QLabel* folder_state;  // free space, or what is wrong with the folder

 private:
  void check();
  QString data_dir_;
};

}  // namespace studio::gui
