#include "gui/devices/worker_picker.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QSettings>

#include "workers/launch/paths.h"

namespace studio::gui {

namespace {

std::vector<std::string> to_std(const QStringList& l) {
  std::vector<std::string> v;
  for (const auto& s : l) v.push_back(s.toStdString());
  return v;
}

}  // namespace

WorkerPicker::WorkerPicker(QWidget* parent) : QWidget(parent) {
  workers = new QComboBox;
  workers->setObjectName("worker");
  workers->setToolTip(tr("The program that runs each rank of a job. A self-contained CUDA worker (unpacked "
                         "anywhere) runs on GPUs; the one installed with the studio may be CPU-only."));
  add_button = new QPushButton(tr("Add..."));
  add_button->setToolTip(tr("Choose a dit-worker program, or the folder a worker archive was unpacked into"));
  build = new QLabel;
  build->setObjectName("worker_build");
  build->setWordWrap(true);
  build->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* row = new QHBoxLayout;
  row->addWidget(workers, 1);
  row->addWidget(add_button);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Worker"), row);
  form->addRow(QString(), build);

  QSettings s;
  added_ = s.value("worker/added").toStringList();
  refresh(s.value("worker/chosen").toString());
  connect(workers, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    build->setText(tr("asking the worker..."));
    QSettings().setValue("worker/chosen", current());
    Q_EMIT chosen(current());
  });
  connect(add_button, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Choose a dit-worker"), QString(), tr("dit-worker"));
    if (!f.isEmpty()) add(f);
  });
}

QString WorkerPicker::current() const {
  const QString w = workers->currentData().toString();
  return w.isEmpty() ? QString::fromStdString(workers::worker_program(to_std(added_))) : w;
}

bool WorkerPicker::add(const QString& entry) {
  const QString worker = QString::fromStdString(workers::worker_at(entry.toStdString()));
  if (worker.isEmpty()) {
    build->setText(tr("%1: no executable dit-worker there; choose the dit-worker program, or the folder a "
                      "worker archive was unpacked into").arg(entry));
    return false;
  }
  added_.removeAll(entry);
  added_.prepend(entry);
  QSettings().setValue("worker/added", added_);
  refresh(worker);
  build->setText(tr("asking the worker..."));
  Q_EMIT chosen(current());
  return true;
}

void WorkerPicker::set_build(const QString& line) { build->setText(line); }

void WorkerPicker::refresh(const QString& choose) {
  const QSignalBlocker quiet(workers);
  workers->clear();
  for (const auto& w : workers::find_workers(to_std(added_))) {
    const QString path = QString::fromStdString(w);
    workers->addItem(path, path);
  }
  const int i = workers->findData(choose);
  workers->setCurrentIndex(i >= 0 ? i : 0);
  if (i < 0 && !choose.isEmpty()) QSettings().remove("worker/chosen");  // gone since: the first one found
}

}  // namespace studio::gui
