#include "gui/compare_view.h"

#include <QDir>
#include <QGridLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <limits>

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
  for (auto it = slowest.begin(); it != slowest.end(); ++it) g->addData(it.key(), it.value());
}

}  // namespace

std::vector<QImage> load_frames(const QString& run_folder) {
  std::vector<QImage> out;
  const QDir dir(run_folder + "/frames");
  for (const auto& name : dir.entryList({"*.png"}, QDir::Files, QDir::Name)) out.push_back(QImage(dir.filePath(name)));
  return out;
}

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  settings = new QTableWidget(0, 3);
  settings->setObjectName("compare_settings");
  settings->setHorizontalHeaderLabels({tr("setting"), tr("run A"), tr("run B")});
  settings->setEditTriggers(QAbstractItemView::NoEditTriggers);
  grid->addWidget(settings, 0, 0, 1, 2);
  plot = new QCustomPlot;
  plot->setMinimumHeight(150);
  plot->xAxis->setLabel(tr("step"));
  plot->yAxis->setLabel(tr("seconds per step (slowest rank)"));
  plot->legend->setVisible(true);
  grid->addWidget(plot, 1, 0);
  memory_plot = new QCustomPlot;
  memory_plot->xAxis->setLabel(tr("step"));
  memory_plot->yAxis->setLabel(tr("memory GiB (largest rank)"));
  memory_plot->legend->setVisible(true);
  grid->addWidget(memory_plot, 1, 1);
  left = new QLabel;
  right = new QLabel;
  for (QLabel* l : {left, right}) {
    l->setMinimumSize(240, 160);
    l->setAlignment(Qt::AlignCenter);
  }
  grid->addWidget(left, 2, 0);
  grid->addWidget(right, 2, 1);
  slider = new QSlider(Qt::Horizontal);
  grid->addWidget(slider, 3, 0, 1, 2);
  difference = new QLabel;
  difference->setObjectName("difference");
  difference->setWordWrap(true);
  grid->addWidget(difference, 4, 0, 1, 2);
  connect(slider, &QSlider::valueChanged, this, &CompareView::show_frame);
  connect(&timer_, &QTimer::timeout, this, [this] { slider->setValue((slider->value() + 1) % std::max<int>(1, slider->maximum() + 1)); });
}

void CompareView::compare(const RunRecord& a, const RunRecord& b) {
  // Settings, those that differ highlighted.
  const auto ja = QJsonDocument::fromJson(a.settings.toUtf8()).object(), jb = QJsonDocument::fromJson(b.settings.toUtf8()).object();
  QStringList keys = ja.keys();
  for (const auto& k : jb.keys())
    if (!keys.contains(k)) keys << k;
  // The settings that differ first.
  std::stable_sort(keys.begin(), keys.end(), [&](const QString& x, const QString& y) {
    return (ja.value(x) != jb.value(x)) > (ja.value(y) != jb.value(y));
  });
  settings->setRowCount(keys.size());
  for (int i = 0; i < keys.size(); ++i) {
    const QString va = ja.value(keys[i]).toVariant().toString(), vb = jb.value(keys[i]).toVariant().toString();
    const QStringList cells{keys[i], va, vb};
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (va != vb) item->setBackground(QColor(255, 230, 150));
      settings->setItem(i, c, item);
    }
  }
  for (auto [p, figure] : {std::pair{plot, 1}, std::pair{memory_plot, 2}}) {
    p->clearGraphs();
    add_steps(p, a, figure, QColor(41, 128, 185), tr("A: %1").arg(a.created));
    add_steps(p, b, figure, QColor(192, 57, 43), tr("B: %1").arg(b.created));
    p->rescaleAxes();
    p->replot();
  }
  // Frames in sync, and their difference when the same seed and model should give the same clip.
  a_ = load_frames(a.folder);
  b_ = load_frames(b.folder);
  const int n = int(std::min(a_.size(), b_.size()));
  slider->setRange(0, std::max(0, n - 1));
  max_difference = -1;
  mean_difference = -1;
  psnr_db = -1;
  const bool comparable = ja.value("seed") == jb.value("seed") && ja.value("model") == jb.value("model") && n > 0 &&
                          a_.size() == b_.size() && a_[0].size() == b_[0].size();
  if (!comparable) {
    difference->setText(tr("Different seeds, models or sizes: the frames are shown side by side but not compared."));
  } else {
    int64_t sum = 0, squares = 0, count = 0;
    max_difference = 0;
    for (int f = 0; f < n; ++f) {
      const QImage x = a_[size_t(f)].convertToFormat(QImage::Format_RGB888), y = b_[size_t(f)].convertToFormat(QImage::Format_RGB888);
      for (int row = 0; row < x.height(); ++row) {
        const uchar *p = x.constScanLine(row), *q = y.constScanLine(row);
        for (int i = 0; i < x.width() * 3; ++i) {
          const int d = std::abs(int(p[i]) - int(q[i]));
          max_difference = std::max(max_difference, d);
          sum += d;
          squares += int64_t(d) * d;
          ++count;
        }
      }
    }
    mean_difference = double(sum) / double(std::max<int64_t>(count, 1));
    const double mse = double(squares) / double(std::max<int64_t>(count, 1));
    psnr_db = mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : std::numeric_limits<double>::infinity();
    difference->setText(max_difference == 0
                            ? tr("Same seed and model: the %1 frames are identical, pixel for pixel.").arg(n)
                            : tr("Same seed and model: frames differ by at most %1 of 255 levels (mean %2; "
                                 "PSNR %3 dB).")
                                  .arg(max_difference)
                                  .arg(mean_difference, 0, 'f', 4)
                                  .arg(psnr_db, 0, 'f', 1));
  }
  show_frame(0);
  timer_.start(125);
}

void CompareView::show_frame(int i) {
  auto put = [&](QLabel* l, const std::vector<QImage>& frames) {
    if (i < int(frames.size())) l->setPixmap(QPixmap::fromImage(frames[size_t(i)]).scaled(l->size(), Qt::KeepAspectRatio));
  };
  put(left, a_);
  put(right, b_);
}

}  // namespace studio::gui
