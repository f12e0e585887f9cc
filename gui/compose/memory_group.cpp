#include "gui/compose/memory_group.h"

#include <QFormLayout>

#include <algorithm>

#include "plan/family.h"
#include "plan/field_labels.h"

namespace studio::gui {

namespace {

QString label(const char* field) { return QString::fromStdString(plan::field_label(field)); }

// Items whose data is the flag's value ("" for off).
QComboBox* choice_box(const char* field, std::initializer_list<std::pair<QString, QString>> items) {
  auto* box = new QComboBox;
  box->setObjectName(field);
  for (const auto& [text, value] : items) box->addItem(text, value);
  return box;
}

void select(QComboBox* box, const std::string& value) {
  const int i = box->findData(QString::fromStdString(value));
  box->setCurrentIndex(i < 0 ? 0 : i);
}

QString gib(double v) { return QString::number(v, 'f', 1) + " GiB"; }

// "--quantize fp8" in the studio's words: "Quantize fp8"; "--offload blocks": "Offload blocks".
// "--quantize fp8 --offload blocks" as "Quantize fp8 + Offload blocks", by each field's label.
QString in_words(const std::string& flags) {
  QStringList out;
  for (const QString& one : QString::fromStdString(flags).split("--", Qt::SkipEmptyParts)) {
    const QString flag = one.trimmed();
    const auto space = flag.indexOf(' ');
    QString words = QString::fromStdString(plan::field_label(flag.left(space).toStdString()));
    const QString value = space < 0 ? QString() : flag.mid(space + 1);
    if (!value.isEmpty() && !words.contains(value, Qt::CaseInsensitive)) words += " " + value;
    out << words;
  }
  return out.join(" + ");
}

}  // namespace

MemoryGroup::MemoryGroup(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  transformer = new PathEdit;
  transformer->setObjectName("transformer");
  transformer->setPlaceholderText(tr("the folder's transformer/ (or a .gguf / .safetensors file)"));
  transformer_2 = new PathEdit;
  transformer_2->setObjectName("transformer_2");
  transformer_2->setPlaceholderText(tr("the folder's transformer_2/"));
  text_encoder = new PathEdit;
  text_encoder->setObjectName("text_encoder");
  text_encoder->setPlaceholderText(tr("the folder's text_encoder/ (or a T5 .gguf / fp8 .safetensors)"));
  text_encoder_2 = new PathEdit;
  text_encoder_2->setObjectName("text_encoder_2");
  text_encoder_2->setPlaceholderText(tr("the folder's text_encoder_2/ (T5)"));
  quantize = choice_box("quantize", {{tr("off (the run's dtype)"), ""}, {tr("fp8 (half of bfloat16)"), "fp8"}});
  offload = choice_box("offload", {{tr("off (on the device)"), ""}, {tr("blocks (host memory)"), "blocks"}});
  text_encoder_device =
      choice_box("text_encoder_device", {{tr("auto (the run's device)"), "auto"}, {tr("CPU"), "cpu"}});
  fp8_gemm = new QCheckBox(tr("multiply in fp8 (Ada and Hopper GPUs: faster, half the weights' memory)"));
  fp8_gemm->setObjectName("fp8_gemm");
  fit = new QLabel;
  fit->setObjectName("weights_fit");
  fit->setWordWrap(true);
  fit->setTextFormat(Qt::RichText);
  form->addRow(label("transformer"), transformer);
  form->addRow(label("transformer_2"), transformer_2);
  form->addRow(label("text_encoder"), text_encoder);
  form->addRow(label("text_encoder_2"), text_encoder_2);
  form->addRow(label("quantize"), quantize);
  form->addRow(label("offload"), offload);
  form->addRow(label("text_encoder_device"), text_encoder_device);
  form->addRow(label("fp8_gemm"), fp8_gemm);
  form->addRow(fit);
  for (auto* edit : {transformer, transformer_2, text_encoder, text_encoder_2}) connect(edit, &QLineEdit::editingFinished, this, &MemoryGroup::changed);
  for (auto* box : {quantize, offload, text_encoder_device})
    connect(box, &QComboBox::currentIndexChanged, this, &MemoryGroup::changed);
  connect(fp8_gemm, &QCheckBox::toggled, this, &MemoryGroup::changed);
  connect(fit, &QLabel::linkActivated, this, &MemoryGroup::take);
}

void MemoryGroup::apply(plan::JobSpec& j) const {
  j.transformer_file = transformer->text().trimmed().toStdString();
  j.transformer_2_file = transformer_2->isVisibleTo(this) ? transformer_2->text().trimmed().toStdString() : "";
  j.text_encoder_file = text_encoder->text().trimmed().toStdString();
  j.text_encoder_2_file = text_encoder_2->isVisibleTo(this) ? text_encoder_2->text().trimmed().toStdString() : "";
  j.quantize = quantize->currentData().toString().toStdString();
  j.offload = offload->currentData().toString().toStdString();
  j.text_encoder_device = text_encoder_device->currentData().toString().toStdString();
  j.fp8_gemm = fp8_gemm->isChecked();
}

void MemoryGroup::show_job(const plan::JobSpec& j) {
  const QSignalBlocker blockers[] = {QSignalBlocker(transformer), QSignalBlocker(transformer_2),
                                     QSignalBlocker(text_encoder), QSignalBlocker(text_encoder_2),
                                     QSignalBlocker(quantize), QSignalBlocker(offload),
                                     QSignalBlocker(text_encoder_device), QSignalBlocker(fp8_gemm)};
  transformer->setText(QString::fromStdString(j.transformer_file));
  transformer_2->setText(QString::fromStdString(j.transformer_2_file));
  text_encoder->setText(QString::fromStdString(j.text_encoder_file));
  text_encoder_2->setText(QString::fromStdString(j.text_encoder_2_file));
  select(quantize, j.quantize);
  select(offload, j.offload);
  select(text_encoder_device, j.text_encoder_device);
  fp8_gemm->setChecked(j.fp8_gemm);
}

void MemoryGroup::set_model(const plan::ModelFolder* model) {
  show_row(transformer_2, model && plan::rules_of(*model).second_expert_boundary(*model) > 0);
  show_row(text_encoder_2, model && model->t5_part() == "text_encoder_2");
}

void MemoryGroup::show_row(QWidget* field, bool on) {
  field->setVisible(on);
  if (auto* l = static_cast<QFormLayout*>(layout())->labelForField(field)) l->setVisible(on);
}

void MemoryGroup::show_fit(const std::vector<plan::StorageChoice>& choices, double memory_gib,
                           const std::vector<std::optional<double>>& seconds) {
  shown_ = choices;
  if (choices.empty()) return fit->clear();
  const auto& as_given = choices.front();
  if (memory_gib <= 0) {
    fit->setText(tr("About %1 per process (the plan's estimate; the CPU's memory is not checked).").arg(gib(as_given.peak_gib)));
    return;
  }
  if (as_given.fits) {
    fit->setText(tr("Fits: %1 per rank of the %2 each GPU has.").arg(gib(as_given.peak_gib), gib(memory_gib)));
    return;
  }
  QStringList ways;
  for (size_t i = 1; i < choices.size(); ++i) {
    if (!choices[i].fits) continue;
    QString way = QString("<a href=\"%1\">%2</a>: %3")
                      .arg(QString::fromStdString(choices[i].flag), in_words(choices[i].flag), gib(choices[i].peak_gib));
    if (i < seconds.size() && seconds[i]) way += tr(", %1 s/step").arg(*seconds[i], 0, 'f', 1);
    ways << way;
  }
  QString text = QString("<span style=\"color: #c0392b;\">%1</span>")
                     .arg(tr("Does not fit: %1 per rank, more than the %2 each GPU has.")
                              .arg(gib(as_given.peak_gib), gib(memory_gib)));
  text += ways.isEmpty() ? tr(" None of the ways of keeping the weights fits: a quantized transformer file "
                              "(GGUF Q8_0, Q4_K) or more GPUs would.")
                         : tr(" These would fit: %1.").arg(ways.join("; "));
  fit->setText(text);
}

void MemoryGroup::take(const QString& flag) {
  const auto c =
      std::find_if(shown_.begin(), shown_.end(), [&](const auto& s) { return s.flag == flag.toStdString(); });
  if (c == shown_.end() || shown_.empty()) return;
  const plan::StorageChoice choice = *c;  // showing the new fit replaces shown_
  const bool other_config = !(choice.config == shown_.front().config);
  select(quantize, choice.job.quantize);
  select(offload, choice.job.offload);
  if (other_config) Q_EMIT chosen(choice.config);
}

}  // namespace studio::gui
