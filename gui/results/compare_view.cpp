#include "gui/results/compare_view.h"

#include <QDir>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QVBoxLayout>

#include <cmath>
#include <limits>
#include <memory>

#include "gui/results/run_info.h"
#include "gui/run/step_plots.h"
#include "qcustomplot.h"

namespace studio::gui {

namespace {

// The largest over the ranks of one figure (1: seconds, 2: memory GiB) for each step, from the history's
// per-rank step record.
void add_steps(QCustomPlot* plot, const RunRecord& r, int figure, const QColor& colour, const QString& name) {
  QMap<double, double> slowest;
  for (const auto& rank : QJsonDocument::fromJson(r.steps.toUtf8()).array())
    for (const auto& s : rank.toArray()) {
      const auto v = s.toArray();
      slowest[v[0].toDouble()] = std::max(slowest.value(v[0].toDouble()), v[figure].toDouble());
    }
  auto* g = plot->addGraph();
  g->setName(name);
  g->setPen(QPen(colour, 2));
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
  for (auto it = slowest.begin(); it != slowest.end(); ++it) g->addData(it.key(), it.value());
}

// Settings that differ between any two runs by construction: not a difference worth showing.
bool always_different(const QString& key) { return key == "output"; }

QLabel* picture() {
  auto* l = new QLabel;
  l->setMinimumSize(160, 110);
  l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
  l->setAlignment(Qt::AlignCenter);
  return l;
}

QWidget* captioned(QLabel* picture, const QString& caption) {
  auto* w = new QWidget;
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(0, 0, 0, 0);
  auto* c = new QLabel(caption);
  c->setAlignment(Qt::AlignCenter);
  v->addWidget(c);
  v->addWidget(picture, 1);
  return w;
}

}  // namespace

std::vector<QImage> load_frames(const QString& run_folder, QSize fit, const std::function<bool()>& go_on) {
  std::vector<QImage> out;
  if (run_folder.isEmpty()) return out;
  const QDir dir(run_folder + "/frames");
  for (const auto& name : dir.entryList({"*.png"}, QDir::Files, QDir::Name)) {
    if (go_on && !go_on()) return {};
    const QImage frame(dir.filePath(name));
    out.push_back(fit.isValid() ? frame.scaled(fit, Qt::KeepAspectRatio) : frame);
  }
  return out;
}

QImage difference_of(const QImage& a, const QImage& b, int gain) {
  if (a.isNull() || a.size() != b.size()) return {};
  const QImage x = a.convertToFormat(QImage::Format_RGB888), y = b.convertToFormat(QImage::Format_RGB888);
  QImage out(x.size(), QImage::Format_RGB888);
  for (int row = 0; row < x.height(); ++row) {
    const uchar *p = x.constScanLine(row), *q = y.constScanLine(row);
    uchar* o = out.scanLine(row);
    for (int i = 0; i < x.width() * 3; ++i) o[i] = uchar(std::min(255, std::abs(int(p[i]) - int(q[i])) * gain));
  }
  return out;
}

CompareView::CompareView(QWidget* parent) : QWidget(parent), loader_(new LatestTask(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  settings = new QTableWidget(0, 3);
  settings->setObjectName("compare_settings");
  settings->setHorizontalHeaderLabels({tr("Setting"), tr("Run A"), tr("Run B")});
  settings->setEditTriggers(QAbstractItemView::NoEditTriggers);
  settings->verticalHeader()->hide();
  settings->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  settings->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  settings->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
  // A long run name keeps its start ("A: run 3, ...") and ends in an ellipsis; the whole is its tooltip.
  settings->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  settings->horizontalHeader()->setTextElideMode(Qt::ElideRight);
  auto* settings_column = new QVBoxLayout;
  settings_column->addWidget(settings, 1);
  show_all = new QCheckBox(tr("Show the settings that are the same too"));
  show_all->setObjectName("compare_show_all");
  settings_column->addWidget(show_all);
  top->addLayout(settings_column, 2);
  plot = make_step_plot(tr("Time per step (slowest rank)"), tr("seconds"));
  memory_plot = make_step_plot(tr("Memory in use (largest rank)"), tr("GiB"));
  top->addWidget(plot, 2);
  top->addWidget(memory_plot, 2);
  layout->addLayout(top, 2);

  auto* frames = new QHBoxLayout;
  left = picture();
  right = picture();
  difference_image = picture();
  difference_image->setObjectName("difference_image");
  frames->addWidget(captioned(left, tr("Run A")), 1);
  frames->addWidget(captioned(right, tr("Run B")), 1);
  frames->addWidget(captioned(difference_image, tr("|A - B|, brightened to show where they differ")), 1);
  layout->addLayout(frames, 3);
  auto* controls = new QHBoxLayout;
  play_button = new QPushButton(tr("Pause"));
  slider = new QSlider(Qt::Horizontal);
  slider->setObjectName("compare_scrub");
  controls->addWidget(play_button);
  controls->addWidget(slider, 1);
  layout->addLayout(controls);
  difference = new QLabel;
  difference->setObjectName("difference");
  difference->setWordWrap(true);
  layout->addWidget(difference);
  connect(show_all, &QCheckBox::toggled, this, &CompareView::show_rows);
  connect(slider, &QSlider::valueChanged, this, &CompareView::show_frame);
  connect(&timer_, &QTimer::timeout, this, [this] { slider->setValue((slider->value() + 1) % std::max<int>(1, slider->maximum() + 1)); });
  connect(play_button, &QPushButton::clicked, this, [this] {
    timer_.isActive() ? timer_.stop() : timer_.start(125);
    play_button->setText(timer_.isActive() ? tr("Pause") : tr("Play"));
  });
}

void CompareView::compare(const RunRecord& a, const RunRecord& b) {
  const auto ja = QJsonDocument::fromJson(a.settings.toUtf8()).object(), jb = QJsonDocument::fromJson(b.settings.toUtf8()).object();
  QStringList keys = ja.keys();
  for (const auto& k : jb.keys())
    if (!keys.contains(k)) keys << k;
  // The settings that differ first.
  std::stable_sort(keys.begin(), keys.end(), [&](const QString& x, const QString& y) {
    return (ja.value(x) != jb.value(x)) > (ja.value(y) != jb.value(y));
  });
  const QString name_a = run_name(a.id, a.prompt, a.settings), name_b = run_name(b.id, b.prompt, b.settings);
  settings->setHorizontalHeaderLabels({tr("Setting"), tr("A: %1").arg(name_a), tr("B: %1").arg(name_b)});
  settings->horizontalHeaderItem(1)->setToolTip(tr("A: %1").arg(name_a));
  settings->horizontalHeaderItem(2)->setToolTip(tr("B: %1").arg(name_b));
  settings->setRowCount(keys.size());
  for (int i = 0; i < keys.size(); ++i) {
    const QString va = ja.value(keys[i]).toVariant().toString(), vb = jb.value(keys[i]).toVariant().toString();
    const QStringList cells{setting_label(keys[i]), va, vb};
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(c == 0 ? keys[i] : cells[c]);
      if (va != vb) item->setBackground(QColor(255, 230, 150));
      settings->setItem(i, c, item);
    }
    settings->item(i, 0)->setData(Qt::UserRole, keys[i]);
  }
  show_rows();
  for (auto [p, figure] : {std::pair{plot, 1}, std::pair{memory_plot, 2}}) {
    p->clearGraphs();
    add_steps(p, a, figure, rank_colour(0), tr("A: %1").arg(name_a));
    add_steps(p, b, figure, rank_colour(1), tr("B: %1").arg(name_b));
    integer_steps_from_zero(p);
    p->replot();
  }
  // Frames in sync, and their difference when the same seed and model should give the same clip: read and
  // measured on a thread (a long clip takes a while), shown when done.
  a_.clear();
  b_.clear();
  max_difference = -1;
  mean_difference = -1;
  psnr_db = -1;
  timer_.stop();
  slider->setRange(0, 0);
  show_frame(0);
  difference->setText(tr("Reading the frames of both runs…"));
  gone_.clear();
  for (const RunRecord* r : {&a, &b})
    if (!r->folder.isEmpty() && !QDir(r->folder).exists())
      gone_ << tr("Run %1's folder %2 is gone (moved or deleted): its frames cannot be shown.").arg(r->id).arg(r->folder);
  const bool same_seed_and_model = ja.value("seed") == jb.value("seed") && ja.value("model") == jb.value("model");
  loader_->start([this, fa = a.folder, fb = b.folder, same_seed_and_model](const std::function<bool()>& go_on) {
    auto c = std::make_shared<Comparison>(compare_frames(load_frames(fa, {}, go_on), load_frames(fb, {}, go_on),
                                                         same_seed_and_model, go_on));
    return [this, c] { show_comparison(std::move(*c)); };
  });
}

CompareView::Comparison CompareView::compare_frames(std::vector<QImage> a, std::vector<QImage> b, bool same_seed_and_model,
                                                    const std::function<bool()>& go_on) {
  Comparison c{std::move(a), std::move(b)};
  const size_t n = std::min(c.a.size(), c.b.size());
  if (!same_seed_and_model || n == 0 || c.a.size() != c.b.size() || c.a[0].size() != c.b[0].size()) return c;
  int64_t sum = 0, squares = 0, count = 0;
  c.max_difference = 0;
  for (size_t f = 0; f < n && go_on(); ++f) {
    const QImage x = c.a[f].convertToFormat(QImage::Format_RGB888), y = c.b[f].convertToFormat(QImage::Format_RGB888);
    for (int row = 0; row < x.height(); ++row) {
      const uchar *p = x.constScanLine(row), *q = y.constScanLine(row);
      for (int i = 0; i < x.width() * 3; ++i) {
        const int d = std::abs(int(p[i]) - int(q[i]));
        c.max_difference = std::max(c.max_difference, d);
        sum += d;
        squares += int64_t(d) * d;
        ++count;
      }
    }
  }
  c.mean_difference = double(sum) / double(std::max<int64_t>(count, 1));
  const double mse = double(squares) / double(std::max<int64_t>(count, 1));
  c.psnr_db = mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : std::numeric_limits<double>::infinity();
  return c;
}

void CompareView::show_comparison(Comparison c) {
  a_ = std::move(c.a);
  b_ = std::move(c.b);
  max_difference = c.max_difference;
  mean_difference = c.mean_difference;
  psnr_db = c.psnr_db;
  const int n = int(std::min(a_.size(), b_.size()));
  slider->setRange(0, std::max(0, n - 1));
  if (!gone_.isEmpty())
    difference->setText(gone_.join(' '));
  else if (max_difference < 0)
    difference->setText(tr("Different seeds, models or sizes: the frames are shown side by side but not compared."));
  else
    difference->setText(max_difference == 0
                            ? tr("Same seed and model: the %1 frames are identical, pixel for pixel.").arg(n)
                            : tr("Same seed and model: frames differ by at most %1 of 255 levels (mean %2; "
                                 "PSNR %3 dB). The difference picture is brightened %4 times.")
                                  .arg(max_difference)
                                  .arg(mean_difference, 0, 'f', 4)
                                  .arg(psnr_db, 0, 'f', 1)
                                  .arg(std::max(1, 255 / std::max(1, max_difference))));
  show_frame(0);
  timer_.start(125);
  play_button->setText(tr("Pause"));
}

void CompareView::show_rows() {
  for (int i = 0; i < settings->rowCount(); ++i) {
    const bool same = settings->item(i, 1)->text() == settings->item(i, 2)->text();
    settings->setRowHidden(i, !show_all->isChecked() &&
                                  (same || always_different(settings->item(i, 0)->data(Qt::UserRole).toString())));
  }
}

void CompareView::show_frame(int i) {
  auto put = [](QLabel* l, const QImage& image) {
    if (image.isNull()) return l->clear();
    l->setPixmap(QPixmap::fromImage(image).scaled(l->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
  };
  const QImage a = i < int(a_.size()) ? a_[size_t(i)] : QImage(), b = i < int(b_.size()) ? b_[size_t(i)] : QImage();
  put(left, a);
  put(right, b);
  // The difference brightened so that the largest one is white (and 0 stays black).
  put(difference_image, max_difference >= 0 ? difference_of(a, b, std::max(1, 255 / std::max(1, max_difference))) : QImage());
}

void CompareView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  show_frame(slider->value());
}

}  // namespace studio::gui
