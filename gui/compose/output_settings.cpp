#include "gui/compose/output_settings.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QSettings>
#include <QVBoxLayout>

#include "plan/output_folder.h"
#include "plan/human_bytes.h"

namespace studio::gui {

namespace {

const char* const kKey = "output/folder";

QString default_root(const QString& data_dir) { return data_dir + "/runs"; }

}  // namespace

QString output_root(const QString& data_dir) {
  const QString chosen = QSettings().value(kKey).toString();
  if (!chosen.isEmpty()) return chosen;
  QDir().mkpath(default_root(data_dir));  // ours to make; a chosen folder must exist already
  return default_root(data_dir);
}

void set_output_root(const QString& folder) {
  if (folder.isEmpty()) QSettings().remove(kKey);
  else QSettings().setValue(kKey, QDir::cleanPath(folder));
}

uint64_t run_output_bytes(const plan::JobSpec& job) {
  // The frames as PNG (little smaller than raw on generated pictures), the clip (about a hundredth), the log.
  return plan::raw_frame_bytes(job) / 100 * 101 + (1 << 20);
}

QString check_output_root(const QString& root, const plan::JobSpec& job) {
  const auto c = plan::check_folder(root.toStdString(), run_output_bytes(job));
  if (c.ok()) return {};
  const QString reason = QString::fromStdString(c.reason(root.toStdString()));
  const QString what = c.state == plan::FolderState::Missing   ? QObject::tr("create it, or choose another")
                       : c.state == plan::FolderState::NoSpace ? QObject::tr("free some space, or choose another")
                                                               : QObject::tr("choose another");
  return QObject::tr("The output folder %1 %2: %3 in Settings > Output folder (Ctrl+,).").arg(root, reason, what);
}

SettingsDialog::SettingsDialog(const QString& data_dir, QWidget* parent) : QDialog(parent), data_dir_(data_dir) {
  setWindowTitle(tr("Settings"));
  setObjectName("settings");
  output_folder = new QLineEdit(output_root(data_dir));
  output_folder->setObjectName("output_folder");
  output_folder->setToolTip(tr("Each run gets a folder of its own in here: its clip or picture, its frames as "
                               "PNG, and its log. Checked before every run for space and write access."));
  output_folder->setMinimumWidth(420);
  browse = new QPushButton(tr("Browse…"));
  folder_state = new QLabel;
  folder_state->setObjectName("output_folder_state");
  folder_state->setWordWrap(true);
  auto* row = new QHBoxLayout;
  row->addWidget(output_folder, 1);
  row->addWidget(browse);
  auto* form = new QFormLayout;
  form->addRow(tr("Output folder"), row);
  form->addRow(QString(), folder_state);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addStretch();
  layout->addWidget(buttons);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Output folder"), output_folder->text());
    if (!dir.isEmpty()) output_folder->setText(dir);
  });
  connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
          [this] { output_folder->setText(default_root(data_dir_)); });
  connect(buttons, &QDialogButtonBox::accepted, this, &SettingsDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &SettingsDialog::reject);
  connect(output_folder, &QLineEdit::textChanged, this, &SettingsDialog::check);
  check();
}

void SettingsDialog::check() {
  const std::string dir = output_folder->text().toStdString();
  const auto c = plan::check_folder(dir);
  folder_state->setStyleSheet(c.ok() ? "" : "color: #c0392b;");
  folder_state->setText(c.ok() ? tr("%1 free").arg(QString::fromStdString(plan::human_bytes(c.free_bytes)))
                               : tr("This folder %1.").arg(QString::fromStdString(c.reason(dir))));
}

void SettingsDialog::accept() {
  const QString folder = QDir::cleanPath(output_folder->text().trimmed());
  if (folder.isEmpty() || !QDir::isAbsolutePath(folder)) {
    folder_state->setStyleSheet("color: #c0392b;");
    folder_state->setText(tr("Give the whole path of a folder, e.g. %1").arg(default_root(data_dir_)));
    return;
  }
  check();
  if (!plan::check_folder(folder.toStdString()).ok()) return;  // the reason is shown under the field
  set_output_root(folder == default_root(data_dir_) ? QString() : folder);
  QDialog::accept();
}

}  // namespace studio::gui
