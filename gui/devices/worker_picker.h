// Which dit-worker runs the jobs: the ones found on the search path (the folders added here, kept in the
// settings; $DIT_STUDIO_WORKER_PATH; beside dit-studio), one chosen, and what it was built with (the
// worker's own --version line, from its device list: LibTorch, CUDA, NCCL).
#pragma once
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QStringList>
#include <QWidget>

namespace studio::gui {

class WorkerPicker : public QWidget {
  Q_OBJECT
 public:
  explicit WorkerPicker(QWidget* parent = nullptr);

  QString current() const;  // the chosen worker's path
  // Adds a dit-worker file, its folder or an unpacked worker archive, keeps it in the settings and
  // chooses it; false (the reason shown) when there is no executable dit-worker there.
  bool add(const QString& entry);
  void set_build(const QString& line);  // what the chosen worker says it was built with

  QComboBox* workers;
  QPushButton* add_button;
  QLabel* build;

 Q_SIGNALS:
  void chosen(const QString& worker);

 private:
  void refresh(const QString& choose);
  QStringList added_;  // the folders and files added here, first on the search path
};

}  // namespace studio::gui
