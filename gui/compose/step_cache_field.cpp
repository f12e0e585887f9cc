#include "gui/compose/step_cache_field.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QSettings>
#include <QStandardPaths>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "plan/field_labels.h"

namespace studio::gui {

namespace {

const char* kMethodHelp[] = {
    "Every step runs every block: the exact result.",
    "First-Block Cache: runs the first block, and skips the others (adding what they added last time) when "
    "its output changed little since the last full step.",
    "TeaCache: skips every block while the accumulated change of the timestep-modulated input, rescaled by "
    "the model's published polynomial, stays under the threshold; the first and last steps always run.",
    "MagCache: skips every block while the error that the model's calibrated magnitude ratios predict stays "
    "under the threshold, a few steps in a row at most; the first fifth of the steps always run. Needs the "
    "ratios, measured once per model and step count (Calibrate now)."};

QString settings_key(const QString& model_dir, int steps) {
  return "magcache/" + QFileInfo(StepCacheField::ratios_file_for(model_dir, steps)).completeBaseName();
}

}  // namespace

StepCacheField::StepCacheField(QWidget* parent) : QWidget(parent) {
  method = new QComboBox;
  method->setObjectName("step_cache");
  method->addItems({tr("off"), tr("First-Block Cache"), tr("TeaCache"), tr("MagCache")});
  for (int i = 0; i < 4; ++i) method->setItemData(i, tr(kMethodHelp[i]), Qt::ToolTipRole);
  method->setToolTip(QString::fromStdString(plan::field_help("step_cache")));
  slider = new QSlider(Qt::Horizontal);
  slider->setObjectName("cache_slider");
  slider->setRange(0, kPositions);
  slider->setTickPosition(QSlider::TicksBelow);
  slider->setTickInterval(kDefaultPosition);  // the ends and the default between them
  slider->setValue(kDefaultPosition);
  slider->setToolTip(tr("Left: fidelity (at the end, 0: nothing is reused, the uncached result). Right: speed "
                        "(more steps reused, the result drifts further). The middle mark is the method's default "
                        "for this model; the right end is %1 times it.")
                         .arg(kSpeedFactor));
  threshold = new QDoubleSpinBox;
  threshold->setObjectName("cache_threshold");
  threshold->setRange(0, plan::kMaxCacheThreshold);
  threshold->setDecimals(3);
  threshold->setSingleStep(0.01);
  threshold->setValue(plan::kFirstBlockCacheThreshold);
  threshold->setToolTip(QString::fromStdString(plan::field_help("cache_threshold")) +
                        tr(" The slider sets it; type a value for one off the slider."));
  auto* fidelity = new QLabel(tr("fidelity"));
  auto* speed = new QLabel(tr("speed"));
  for (QLabel* l : {fidelity, speed}) l->setStyleSheet("color: palette(placeholder-text);");

  ratios_label = new QLabel;
  ratios_label->setObjectName("magcache_ratios");
  ratios_label->setWordWrap(true);
  ratios_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  calibrate_button = new QPushButton(tr("Calibrate now"));
  calibrate_button->setObjectName("magcache_calibrate");
  calibrate_button->setToolTip(tr("Queues an uncached run of this job that measures the model's magnitude "
                                  "ratios at this step count and keeps them in the studio's data folder; "
                                  "MagCache then uses them for this model and step count."));
  browse_button = new QPushButton(tr("Browse…"));
  browse_button->setToolTip(tr("Use another ratios file (one that --magcache_calibrate wrote) for this model and "
                               "step count"));
  ratios_row_ = new QWidget;
  auto* ratios = new QGridLayout(ratios_row_);
  ratios->setContentsMargins(0, 0, 0, 0);
  ratios->addWidget(ratios_label, 0, 0, 1, 3);
  ratios->addWidget(calibrate_button, 1, 0);
  ratios->addWidget(browse_button, 1, 1);
  ratios->setColumnStretch(2, 1);

  auto* trade = new QHBoxLayout;
  trade->addWidget(fidelity);
  trade->addWidget(slider, 1);
  trade->addWidget(speed);
  trade->addSpacing(8);
  auto* threshold_label = new QLabel(tr("threshold"));  // the number is the method's threshold, not a speed
  threshold_label->setBuddy(threshold);
  trade->addWidget(threshold_label);
  trade->addWidget(threshold);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  column->addWidget(method);
  column->addLayout(trade);
  column->addWidget(ratios_row_);
  method_chosen();

  connect(method, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    method_chosen();
    // A method starts from its own default for the model.
    const QSignalBlocker quiet(threshold), still(slider);
    slider->setValue(kDefaultPosition);
    threshold->setValue(default_threshold());
    Q_EMIT changed();
  });
  connect(slider, &QSlider::valueChanged, this, [this](int position) {
    const QSignalBlocker quiet(threshold);
    threshold->setValue(threshold_at(position, default_threshold()));
    Q_EMIT changed();
  });
  connect(threshold, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double t) {
    const QSignalBlocker still(slider);
    slider->setValue(position_of(t, default_threshold()));
    Q_EMIT changed();
  });
  connect(calibrate_button, &QPushButton::clicked, this, [this] {
    const QString file = ratios_file_for(shown_dir_, shown_steps_);
    QDir().mkpath(QFileInfo(file).path());
    QSettings().remove(settings_key(shown_dir_, shown_steps_));  // the new measurement, not a file picked before
    Q_EMIT calibrate_requested();
  });
  connect(browse_button, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("MagCache ratios"), QFileInfo(ratios_label->text()).path(),
                                                   tr("Ratios (*.json);;All files (*)"));
    if (f.isEmpty()) return;
    QSettings().setValue(settings_key(shown_dir_, shown_steps_), f);
    show_ratios(shown_dir_, shown_steps_);
    Q_EMIT changed();
  });
}

double StepCacheField::threshold_at(int position, double default_threshold) {
  position = std::clamp(position, 0, kPositions);
  if (position <= kDefaultPosition) return default_threshold * position / kDefaultPosition;
  const double above = double(position - kDefaultPosition) / (kPositions - kDefaultPosition);
  return std::min(default_threshold * std::pow(kSpeedFactor, above), plan::kMaxCacheThreshold);
}

int StepCacheField::position_of(double threshold, double default_threshold) {
  if (!(threshold > 0) || !(default_threshold > 0)) return 0;
  if (threshold <= default_threshold)
    return std::max(1, int(std::lround(kDefaultPosition * threshold / default_threshold)));  // 0 stays "exact"
  const double above = std::log(threshold / default_threshold) / std::log(kSpeedFactor);
  return std::min(kPositions, kDefaultPosition + int(std::lround(above * (kPositions - kDefaultPosition))));
}

QString StepCacheField::ratios_file_for(const QString& model_dir, int steps) {
  const QString folder = QDir::cleanPath(QFileInfo(model_dir).absoluteFilePath());
  const QString hash = QCryptographicHash::hash(folder.toUtf8(), QCryptographicHash::Sha1).toHex().left(10);
  const QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  return data + "/magcache/" + QFileInfo(folder).fileName() + "-" + hash + "-" + QString::number(steps) +
         "steps.json";
}

void StepCacheField::set_model(const plan::ModelFolder* model) {
  model_ = model;
  if (method->currentIndex() == Off) return;
  const QSignalBlocker quiet(threshold);
  threshold->setValue(threshold_at(slider->value(), default_threshold()));
}

double StepCacheField::default_threshold() const {
  plan::JobSpec j;
  j.use_fbcache = method->currentIndex() == FirstBlock;
  j.use_teacache = method->currentIndex() == TeaCache;
  j.use_magcache = method->currentIndex() == MagCache;
  return model_ ? plan::cache_threshold(j, *model_) : j.use_magcache ? plan::kMagCacheThreshold
                                                                     : plan::kFirstBlockCacheThreshold;
}

void StepCacheField::method_chosen() {
  const int m = method->currentIndex();
  slider->setEnabled(m != Off);
  threshold->setEnabled(m != Off);
  ratios_row_->setVisible(m == MagCache);
  method->setToolTip(QString::fromStdString(plan::field_help("step_cache")) + "\n\n" + tr(kMethodHelp[m]));
}

void StepCacheField::apply(plan::JobSpec& job, bool calibrating) const {
  const QString dir = QString::fromStdString(job.model_dir);
  if (calibrating) {
    job.use_fbcache = job.use_teacache = job.use_magcache = false;
    job.magcache_calibrate = ratios_file_for(dir, job.num_inference_steps).toStdString();
    return;
  }
  const int m = method->currentIndex();
  job.use_fbcache = m == FirstBlock;
  job.use_teacache = m == TeaCache;
  job.use_magcache = m == MagCache;
  if (m != Off) job.cache_threshold = threshold->value();
  if (m == MagCache) job.magcache_ratios = ratios_for(dir, job.num_inference_steps).toStdString();
}

void StepCacheField::show_job(const plan::JobSpec& job) {
  const QSignalBlocker quiet(method), still(slider), quiet_too(threshold);
  method->setCurrentIndex(job.use_magcache ? MagCache : job.use_teacache ? TeaCache : job.use_fbcache ? FirstBlock : Off);
  method_chosen();
  const double t = model_ ? plan::cache_threshold(job, *model_) : job.cache_threshold;
  if (!std::isnan(t)) threshold->setValue(t);
  slider->setValue(position_of(threshold->value(), default_threshold()));
  const QString ratios = QString::fromStdString(job.magcache_ratios);
  // A run's own ratios file, read back from history, stays this model and step count's choice.
  if (job.use_magcache && !ratios.isEmpty() &&
      ratios != ratios_file_for(QString::fromStdString(job.model_dir), job.num_inference_steps))
    QSettings().setValue(settings_key(QString::fromStdString(job.model_dir), job.num_inference_steps), ratios);
}

QString StepCacheField::ratios_for(const QString& model_dir, int steps) const {
  const QString picked = QSettings().value(settings_key(model_dir, steps)).toString();
  if (!picked.isEmpty() && QFileInfo::exists(picked)) return picked;
  const QString own = ratios_file_for(model_dir, steps);
  return QFileInfo::exists(own) ? own : QString();
}

void StepCacheField::show_ratios(const QString& model_dir, int steps) {
  shown_dir_ = model_dir;
  shown_steps_ = steps;
  const QString file = ratios_for(model_dir, steps);
  ratios_label->setText(file.isEmpty()
                            ? tr("No ratios for this model at %1 steps yet: Calibrate now runs it once uncached and "
                                 "keeps them.")
                                  .arg(steps)
                            : tr("Ratios: %1").arg(QDir::toNativeSeparators(file)));
  ratios_label->setToolTip(file);
}

}  // namespace studio::gui
