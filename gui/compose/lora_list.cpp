#include "gui/compose/lora_list.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMimeData>
#include <QSettings>
#include <QToolButton>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "hub/cache.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/lora_choice.h"

namespace studio::gui {

namespace {

constexpr int kSliderSteps = 100;  // the slider's positions per unit of strength

bool is_lora_file(const QString& path) { return path.endsWith(".safetensors", Qt::CaseInsensitive); }

}  // namespace

std::vector<std::string> lora_trigger_words(const std::string& file, size_t n) {
  std::map<std::string, double> counts;
  std::vector<std::string> out;
  try {
    const auto meta = io::SafetensorsFile::open(file)->metadata();
    // The phrase its maker names (the ModelSpec convention), first; then kohya's tags, most frequent first.
    if (const auto phrase = meta.find("modelspec.trigger_phrase"); phrase != meta.end() && !phrase->second.empty())
      out.push_back(phrase->second);
    if (const auto it = meta.find("ss_tag_frequency"); it != meta.end()) {
      const auto folders = nlohmann::json::parse(it->second);
      for (const auto& [folder, words] : folders.items())
        if (words.is_object())
          for (const auto& [word, count] : words.items())
            if (count.is_number()) counts[word] += count.get<double>();
    }
  } catch (const std::exception&) {
    return out;  // unreadable files are the plan's to name; they have no more words to offer
  }
  std::vector<std::pair<std::string, double>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < sorted.size() && out.size() < n; ++i)
    if (std::find(out.begin(), out.end(), sorted[i].first) == out.end()) out.push_back(sorted[i].first);
  return out;
}

LoraList::LoraList(const char* field, QWidget* parent) : QWidget(parent) {
  setObjectName(field);
  setAcceptDrops(true);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  list_ = new QVBoxLayout;
  column->addLayout(list_);
  add_button = new QPushButton(tr("Add LoRA..."));
  add_button->setObjectName(QString(field) + "_add");
  add_button->setToolTip(tr("Choose LoRA files (.safetensors) to apply to the model, or drop them here"));
  column->addWidget(add_button, 0, Qt::AlignLeft);
  refused_ = new QLabel;
  refused_->setObjectName(QString(field) + "_refused");
  refused_->setWordWrap(true);
  refused_->setStyleSheet("color: #c0392b");
  refused_->hide();
  column->addWidget(refused_);
  connect(add_button, &QPushButton::clicked, this, [this] {
    // Where LoRAs were last added from; at first the Hugging Face cache, where dit-models and the Models tab put them.
    QSettings settings;
    const QString start =
        settings.value("compose/lora_folder", QString::fromStdString(hub::settings_from_environment().cache_dir))
            .toString();
    const auto files = QFileDialog::getOpenFileNames(this, tr("Add LoRAs"), start, tr("LoRA (*.safetensors)"));
    if (!files.isEmpty()) settings.setValue("compose/lora_folder", QFileInfo(files.front()).absolutePath());
    for (const auto& f : files) add(f);
  });
}

void LoraList::add(const QString& file, double strength) {
  refused_->setVisible(file.contains(','));
  if (file.contains(',')) {  // the job's list is comma-separated: such a file cannot be named in it
    refused_->setText(tr("%1: a comma in its path cannot be in the list of LoRAs; rename the file or its folder").arg(file));
    return;
  }
  Row row;
  row.file = file;
  row.box = new QWidget;
  auto* lines = new QVBoxLayout(row.box);
  lines->setContentsMargins(0, 0, 0, 0);
  auto* line = new QHBoxLayout;
  row.enabled = new QCheckBox(QFileInfo(file).fileName());
  row.enabled->setChecked(true);
  row.enabled->setToolTip(tr("%1\nUnchecked: kept here, not applied").arg(file));
  connect(row.enabled, &QCheckBox::toggled, this, &LoraList::changed);
  row.slider = new QSlider(Qt::Horizontal);
  row.slider->setRange(-2 * kSliderSteps, 2 * kSliderSteps);
  row.strength = new QDoubleSpinBox;
  row.strength->setRange(-100, 100);
  row.strength->setSingleStep(0.05);
  row.strength->setDecimals(2);
  row.strength->setToolTip(tr("How strongly the LoRA applies: 1 as trained, 0 not at all"));
  row.slider->setToolTip(row.strength->toolTip());
  auto* remove_button = new QToolButton;
  remove_button->setText(QStringLiteral("\u00d7"));
  remove_button->setToolTip(tr("Remove this LoRA"));
  line->addWidget(row.enabled, 1);
  line->addWidget(row.slider, 1);
  line->addWidget(row.strength);
  line->addWidget(remove_button);
  lines->addLayout(line);
  row.triggers = new QLabel;
  row.triggers->setWordWrap(true);
  QStringList links;
  for (const auto& w : lora_trigger_words(file.toStdString())) {
    const auto word = QString::fromStdString(w).toHtmlEscaped();
    links << QStringLiteral("<a href=\"%1\">%1</a>").arg(word);
  }
  row.triggers->setText(tr("Trained on: %1").arg(links.join(", ")));
  row.triggers->setVisible(!links.isEmpty());
  connect(row.triggers, &QLabel::linkActivated, this, &LoraList::trigger_chosen);
  lines->addWidget(row.triggers);

  row.strength->setValue(strength);
  row.slider->setValue(int(std::lround(strength * kSliderSteps)));
  QSlider* slider = row.slider;
  QDoubleSpinBox* spin = row.strength;
  connect(slider, &QSlider::valueChanged, this, [spin](int v) {
    if (std::lround(spin->value() * kSliderSteps) != v) spin->setValue(double(v) / kSliderSteps);
  });
  connect(spin, &QDoubleSpinBox::valueChanged, this, [this, slider](double v) {
    const QSignalBlocker quiet(slider);  // beyond the slider's range it rests at its end
    slider->setValue(int(std::lround(v * kSliderSteps)));
    Q_EMIT changed();
  });
  QWidget* box = row.box;
  connect(remove_button, &QToolButton::clicked, this, [this, box] {
    for (size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].box == box) return remove(int(i));
  });
  list_->addWidget(row.box);
  rows_.push_back(row);
  Q_EMIT changed();
}

void LoraList::remove(int row) {
  rows_.at(size_t(row)).box->deleteLater();
  rows_.erase(rows_.begin() + row);
  Q_EMIT changed();
}

std::string LoraList::rows_switched(bool on) const {
  std::string list;
  for (const auto& r : rows_)
    if (r.enabled->isChecked() == on)
      list = plan::add_lora(list, r.file.toStdString() + ":" + QString::number(r.strength->value(), 'g', 6).toStdString());
  return list;
}

std::string LoraList::value() const { return rows_switched(true); }

std::string LoraList::switched_off() const { return rows_switched(false); }

void LoraList::add_switched_off(const std::string& list) {
  for (const auto& use : plan::parse_loras(list)) {
    add(QString::fromStdString(use.file), use.scale);
    rows_.back().enabled->setChecked(false);
  }
}

void LoraList::set_value(const std::string& list) {
  if (list == value()) return;
  const QSignalBlocker quiet(this);
  while (!rows_.empty()) remove(count() - 1);
  for (const auto& use : plan::parse_loras(list)) add(QString::fromStdString(use.file), use.scale);
}

void LoraList::dragEnterEvent(QDragEnterEvent* e) {
  if (!e->mimeData()->hasUrls()) return;
  for (const auto& url : e->mimeData()->urls())
    if (!is_lora_file(url.toLocalFile())) return;
  e->acceptProposedAction();
}

void LoraList::dropEvent(QDropEvent* e) {
  for (const auto& url : e->mimeData()->urls()) add(url.toLocalFile());
  e->acceptProposedAction();
}

}  // namespace studio::gui
