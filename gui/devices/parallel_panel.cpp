#include "gui/devices/parallel_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QMenu>

#include <algorithm>
#include <thread>

#include "plan/family.h"
#include "plan/field_labels.h"
#include "plan/parallel_defaults.h"
#include "workers/launch/calibration.h"
#include "workers/launch/paths.h"

namespace studio::gui {

namespace {

QString auto_tip() {
  return ParallelPanel::tr("The valid configuration the cost model predicts fastest among those that fit "
                           "(the devices are measured once, in seconds; docs/cost-model.md)");
}

QSpinBox* degree(const char* name, int lo = 1, int hi = plan::kMaxDegree) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setObjectName(name);
  return s;
}

}  // namespace

ParallelPanel::ParallelPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  devices = new QListWidget;
  devices->setObjectName("devices");
  devices->setMaximumHeight(80);
  form->addRow(tr("Devices"), devices);
  ulysses = degree("ulysses_degree");
  ring = degree("ring_degree");
  pipefusion = degree("pipefusion_parallel_degree");
  patches = degree("num_pipeline_patch");
  warmup = degree("warmup_steps", 0, plan::kMaxWarmupSteps);
  data = degree("data_parallel_degree");
  cfg = new QCheckBox(tr("the two guidance branches on two groups"));
  cfg->setObjectName("use_cfg_parallel");
  shard_weights = new QCheckBox(tr("each rank keeps 1/N of every block"));
  shard_weights->setObjectName("shard_weights");
  parallel_vae = new QCheckBox(tr("every rank encodes and decodes a band of rows"));
  parallel_vae->setObjectName("use_parallel_vae");
  oversubscribe = new QCheckBox(tr("more processes than cores (each step slower)"));
  oversubscribe->setObjectName("oversubscribe");
  for (QWidget* w : std::initializer_list<QWidget*>{ulysses, ring, pipefusion, patches, warmup, cfg, data, shard_weights,
                                                    oversubscribe})
    form->addRow(QString::fromStdString(plan::field_label(w->objectName().toStdString())), w);
  form_ = form;
  product = new QLabel;
  product->setObjectName("product");
  product->setWordWrap(true);
  form->addRow(tr("Ranks"), product);
  // One place for the group's problems, below its fields: a problem appearing moves none of them.
  form->addRow(problems_.make({"world_size", "memory", "ulysses_degree", "ring_degree", "pipefusion_parallel_degree",
                               "num_pipeline_patch", "warmup_steps", "use_cfg_parallel", "data_parallel_degree",
                               "use_parallel_vae", "shard_weights", "auto"}));
  suggestions = new QToolButton;
  suggestions->setText(tr("Valid configurations"));
  suggestions->setToolTip(tr("Every configuration that fills the selected devices and that this job and model "
                             "allow, nearest to the current one first"));
  suggestions->setPopupMode(QToolButton::InstantPopup);
  suggestions->setMenu(new QMenu(suggestions));
  auto_pick = new QToolButton;
  auto_pick->setObjectName("auto");
  auto_pick->setText(tr("Auto"));
  auto_pick->setToolTip(auto_tip());
  auto* choose = new QHBoxLayout;
  choose->addWidget(suggestions);
  choose->addWidget(auto_pick);
  choose->addStretch();
  form->addRow(QString(), choose);
  calibration_ = new CalibrationTask(this);
  connect(auto_pick, &QToolButton::clicked, this, [this] { choose_fastest(true); });
  connect(calibration_, &CalibrationTask::measured, this, [this](const plan::Calibration& c, const QString& busy) {
    measured_ = c;
    show_measuring(false);
    choose_fastest(false);
    busy_note_ = busy.isEmpty() ? QString()
                                : tr("The devices were measured while %1: Auto's choice may be far off, and the "
                                     "figures were not kept. Click Auto again when the machine is quiet.")
                                      .arg(busy);
    if (!busy_note_.isEmpty()) Q_EMIT changed();  // the window validates, showing it below the fields
  });
  connect(calibration_, &CalibrationTask::failed, this, [this](const QString& why) {
    show_measuring(false);
    const QString said = why.trimmed();
    auto_failed(tr("measuring the devices failed: %1").arg(said.size() > 400 ? said.left(400) + "…" : said));
  });

  // A field edited by hand: what refit said no longer describes it.
  for (QSpinBox* s : {ulysses, ring, pipefusion, patches, warmup, data}) {
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, [this] { refit_note_.clear(); });
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ParallelPanel::changed);
  }
  for (QCheckBox* c : {cfg, shard_weights, parallel_vae, oversubscribe}) {
    connect(c, &QCheckBox::toggled, this, [this] { refit_note_.clear(); });
    connect(c, &QCheckBox::toggled, this, &ParallelPanel::changed);
  }
  connect(devices, &QListWidget::itemChanged, this, &ParallelPanel::devices_changed);
  connect(devices, &QListWidget::itemChanged, this, &ParallelPanel::changed);
  set_config(plan::ParallelConfig{});
  set_devices({});
}

void ParallelPanel::set_devices(const workers::Devices& d) {
  devices_ = d;
  measured_.reset();
  auto_problem_.clear();
  const QSignalBlocker block(devices);
  devices->clear();
  for (const auto& g : d.gpus) {
    auto* item = new QListWidgetItem(QString("GPU %1: %2 (%3 GiB)").arg(g.index).arg(QString::fromStdString(g.name))
                                         .arg(double(g.memory_bytes) / (1 << 30), 0, 'f', 1));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Checked);
    devices->addItem(item);
  }
  form_->setRowVisible(oversubscribe, d.gpus.empty());
  if (d.gpus.empty() && d.cpu_cores == 0) {
    devices->addItem(tr("CPU (asking dit-worker for the GPUs…)"));
  } else if (d.gpus.empty()) {
    auto* cpu = new QListWidgetItem(tr("CPU (%1 cores, %2 GiB)").arg(d.cpu_cores).arg(double(d.cpu_memory_bytes) / (1 << 30), 0, 'f', 0));
    cpu->setToolTip(d.note.empty() ? tr("no GPU found") : QString::fromStdString(d.note));
    devices->addItem(cpu);
  }
  Q_EMIT devices_changed();
  Q_EMIT changed();
}

plan::ParallelConfig ParallelPanel::config() const {
  plan::ParallelConfig p;
  p.ulysses_degree = ulysses->value();
  p.ring_degree = ring->value();
  p.pipefusion_parallel_degree = pipefusion->value();
  p.num_pipeline_patch = patches->value();
  p.warmup_steps = warmup->value();
  p.use_cfg_parallel = cfg->isChecked();
  p.data_parallel_degree = data->value();
  p.use_parallel_vae = parallel_vae->isChecked();
  p.shard_weights = shard_weights->isChecked();
  return p;
}

void ParallelPanel::set_config(const plan::ParallelConfig& p) {
  {
    const QSignalBlocker b1(ulysses), b2(ring), b3(pipefusion), b4(patches), b5(warmup), b6(cfg), b7(data), b8(parallel_vae), b9(shard_weights);
    ulysses->setValue(p.ulysses_degree);
    ring->setValue(p.ring_degree);
    pipefusion->setValue(p.pipefusion_parallel_degree);
    patches->setValue(p.num_pipeline_patch);
    warmup->setValue(p.warmup_steps);
    cfg->setChecked(p.use_cfg_parallel);
    data->setValue(p.data_parallel_degree);
    parallel_vae->setChecked(p.use_parallel_vae);
    shard_weights->setChecked(p.shard_weights);
  }
  Q_EMIT changed();
}

int ParallelPanel::processes() const { return on_gpus() ? selected_gpus().size() : config().world_size(); }

QStringList ParallelPanel::selected_gpus() const {
  QStringList out;
  for (int i = 0; i < devices->count() && on_gpus(); ++i)
    if (devices->item(i)->checkState() == Qt::Checked) out << QString::number(devices_.gpus[size_t(i)].index);
  return out;
}

double ParallelPanel::memory_gib() const {
  double m = 0;
  for (int i = 0; i < devices->count() && on_gpus(); ++i)
    if (devices->item(i)->checkState() == Qt::Checked) {
      const double g = double(devices_.gpus[size_t(i)].memory_bytes) / (1 << 30);
      m = m == 0 ? g : std::min(m, g);
    }
  return m;
}

void ParallelPanel::set_worker(const QString& program) {
  if (program == worker_) return;
  worker_ = program;
  measured_.reset();
}

std::string ParallelPanel::dtype(const plan::JobSpec& job) const { return plan::calibration_dtype(job, on_gpus()); }

std::optional<plan::Calibration> ParallelPanel::calibration(int processes, const std::string& dtype) const {
  if (auto cached = workers::cached_calibration(devices_, processes, dtype)) return cached;
  if (measured_ && measured_->ranks == processes && measured_->dtype == dtype) return measured_;
  return std::nullopt;
}

std::vector<plan::Prediction> ParallelPanel::predictions(const std::vector<plan::ParallelConfig>& configs,
                                                         const plan::JobSpec& job,
                                                         const plan::ModelFolder& model) const {
  if (configs.empty()) return {};
  const auto cal = calibration(configs.front().world_size(), dtype(job));
  if (!cal) return {};
  std::vector<plan::Prediction> out;
  for (const auto& p : configs)
    out.push_back(plan::predict(p, job, model, *cal, plan::bytes_per_value(job, on_gpus()), memory_gib()));
  return out;
}

std::vector<plan::Prediction> ParallelPanel::rank() const {
  if (!job_ || !model_) return {};
  auto out = predictions(valid_, *job_, *model_);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& z) {
    return a.fits != z.fits ? a.fits : a.total_s < z.total_s;
  });
  return out;
}

void ParallelPanel::choose_fastest(bool measure) {
  if (!job_ || !model_ || valid_.empty() || calibration_->running()) return;
  if (!auto_problem_.isEmpty()) {  // said again below if it still is
    auto_problem_.clear();
    Q_EMIT changed();
  }
  if (measure && !busy_note_.isEmpty()) {  // figures from a busy machine: measured again (or the cache's)
    busy_note_.clear();
    measured_.reset();
  }
  const auto ranked = rank();
  if (ranked.empty() && measure) {
    show_measuring(true);
    const std::string worker = worker_.isEmpty() ? workers::worker_program() : worker_.toStdString();
    calibration_->start(worker, devices_, valid_.front().world_size(), dtype(*job_));
    return;
  }
  if (ranked.empty())  // measured for other devices or processes than those now chosen
    return auto_failed(tr("the devices or the process count changed while they were measured; click Auto again."));
  if (!ranked.front().fits)
    return auto_failed(tr("no valid configuration fits in the devices' memory: %1")
                           .arg(QString::fromStdString(ranked.front().reason)));
  plan::ParallelConfig best = ranked.front().config;
  best.use_parallel_vae = parallel_vae->isChecked();
  refit_note_.clear();
  set_config(best);  // the window validates, and offer() lists the predictions
  Q_EMIT auto_done();
}

void ParallelPanel::auto_failed(const QString& why) {
  auto_problem_ = tr("Auto could not rank the configurations: %1").arg(why);
  Q_EMIT changed();  // the window validates, showing it below the fields
  Q_EMIT auto_done();
}

void ParallelPanel::show_measuring(bool on) {
  auto_pick->setText(on ? tr("Measuring the devices…") : tr("Auto"));
  auto_pick->setToolTip(on ? tr("dit-worker is measuring the rates of the devices and the links between the "
                                "processes for the cost model (seconds; once per device set)")
                           : auto_tip());
  auto_pick->setEnabled(!on && !valid_.empty() && model_);
}

void ParallelPanel::offer(const std::vector<plan::ParallelConfig>& valid, const plan::JobSpec* job,
                          const plan::ModelFolder* model) {
  valid_ = valid;
  job_ = job ? std::optional(*job) : std::nullopt;
  model_ = model ? std::optional(*model) : std::nullopt;
  QMenu* menu = suggestions->menu();
  menu->clear();
  const auto ranked = rank();
  std::vector<std::pair<plan::ParallelConfig, QString>> entries;
  for (const auto& r : ranked)
    entries.push_back({r.config, QString::fromStdString(r.config.describe()) +
                                     tr(": %1 s/step, %2 GiB per rank%3")
                                         .arg(r.seconds_per_step, 0, 'g', 3)
                                         .arg(r.peak_bytes_per_rank / plan::kGiB, 0, 'f', 1)
                                         .arg(r.fits ? QString() : tr(" (does not fit)"))});
  if (ranked.empty())
    for (const auto& p : valid) entries.push_back({p, QString::fromStdString(p.describe())});
  for (const auto& [p, text] : entries) {
    auto* a = menu->addAction(text);
    connect(a, &QAction::triggered, this, [this, p] {
      plan::ParallelConfig keep = p;
      keep.use_parallel_vae = parallel_vae->isChecked();
      refit_note_.clear();
      set_config(keep);
    });
  }
  suggestions->setEnabled(!valid.empty());
  auto_pick->setEnabled(!valid.empty() && model != nullptr && !calibration_->running());
  product->setText(QString::fromStdString(config().describe()) +
                   (!on_gpus()                       ? tr(" on the CPU")
                    : selected_gpus().size() == 1 ? tr(" on the selected GPU")
                                                  : tr(" on %1 selected GPUs").arg(selected_gpus().size())));
}

std::vector<plan::Problem> ParallelPanel::show_problems(const std::vector<plan::Problem>& problems) {
  std::vector<plan::Problem> warnings, hints;
  if (!on_gpus() && oversubscribe->isChecked())
    if (auto w = plan::cpu_processes_problem(config().world_size(), cpu_cores())) warnings.push_back(*w);
  if (!auto_problem_.isEmpty()) warnings.push_back({"auto", auto_problem_.toStdString()});
  if (!busy_note_.isEmpty() && measured_) warnings.push_back({"auto", busy_note_.toStdString()});
  if (!refit_note_.isEmpty()) hints.push_back({"world_size", refit_note_.toStdString()});
  return problems_.show(problems, warnings, hints);
}

int ParallelPanel::cpu_cores() const {
  return devices_.cpu_cores > 0 ? devices_.cpu_cores : int(std::thread::hardware_concurrency());
}

std::vector<plan::Problem> ParallelPanel::machine_problems(const plan::JobSpec& job, const plan::ModelFolder& model) const {
  std::vector<plan::Problem> out;
  if (on_gpus()) return out;
  if (auto p = plan::cpu_processes_problem(config().world_size(), cpu_cores()); p && !oversubscribe->isChecked()) {
    p->message += "; or tick " + plan::field_label("oversubscribe") + " to run them anyway";
    out.push_back(*p);
  }
  if (auto p = plan::cpu_memory_problem(config(), job, model, double(devices_.cpu_memory_bytes) / plan::kGiB))
    out.push_back(*p);
  return out;
}

int ParallelPanel::offer_processes() const {
  if (on_gpus()) return processes();
  const int wanted = std::max(1, config().world_size());
  return oversubscribe->isChecked() ? wanted : std::min(wanted, std::max(1, cpu_cores()));
}

void ParallelPanel::refit(const plan::JobSpec& job, const plan::ModelFolder& model) {
  if (processes() < 1) return;
  const plan::ParallelConfig was = config();
  plan::JobSpec j = job;
  plan::apply_model_defaults(j, model);
  auto problems = plan::validate_parallel(was, j, model, processes());
  const auto machine = machine_problems(j, model);
  problems.insert(problems.end(), machine.begin(), machine.end());
  if (problems.empty()) return;
  const plan::ParallelConfig next = plan::default_parallel(j, model, on_gpus() ? processes() : 1);
  if (next == was) return;
  // Why the configuration set cannot run here, without the list of valid ones (the menu has them).
  std::string why = plan::in_window_words(problems.front().message);
  if (const auto list = why.find(" Valid for "); list != std::string::npos) why.resize(list);
  refit_note_ = tr("Set to %1 for these devices and this model; %2 cannot run here: %3")
                    .arg(QString::fromStdString(next.describe()), QString::fromStdString(was.describe()),
                         QString::fromStdString(why));
  set_config(next);
}

}  // namespace studio::gui
