#include "gui/run/log_pane.h"

#include <QFile>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QSettings>
#include <QTextStream>
#include <QVBoxLayout>

namespace studio::gui {

namespace {

QString prefix(int rank) { return rank < 0 ? QObject::tr("[launcher] ") : QObject::tr("[rank %1] ").arg(rank); }

}  // namespace

LogPane::LogPane(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  toggle = new QToolButton;
  toggle->setObjectName("log_toggle");
  toggle->setCheckable(true);
  toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toggle->setAutoRaise(true);
  toggle->setToolTip(tr("What each rank prints while it runs: its log and its error output"));
  body_ = new QWidget;
  auto* body = new QVBoxLayout(body_);
  body->setContentsMargins(0, 0, 0, 0);
  auto* filter_row = new QHBoxLayout;
  rank_filter = new QComboBox;
  rank_filter->setObjectName("log_rank_filter");
  rank_filter->setToolTip(tr("Show the lines of one rank only"));
  filter_row->addWidget(new QLabel(tr("Show")));
  filter_row->addWidget(rank_filter);
  filter_row->addStretch();
  body->addLayout(filter_row);
  text = new QPlainTextEdit;
  text->setObjectName("log_text");
  text->setReadOnly(true);
  text->setLineWrapMode(QPlainTextEdit::WidgetWidth);  // every line readable from its rank on
  text->setMaximumBlockCount(int(kKeptLines));
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text->setMinimumHeight(120);
  body->addWidget(text);
  layout->addWidget(toggle);
  layout->addWidget(body_);
  connect(toggle, &QToolButton::toggled, this, [this](bool open) {
    body_->setVisible(open);
    toggle->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
    QSettings().setValue("run/log_open", open);
  });
  connect(rank_filter, &QComboBox::currentIndexChanged, this, [this] { render(); });
  const bool open = QSettings().value("run/log_open", false).toBool();
  toggle->setChecked(open);
  body_->setVisible(open);
  toggle->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
  start(0);
}

void LogPane::start(int ranks) {
  lines_.clear();
  const QSignalBlocker quiet(rank_filter);
  rank_filter->clear();
  rank_filter->addItem(tr("All ranks"), -1);
  for (int r = 0; r < ranks; ++r) rank_filter->addItem(tr("Rank %1").arg(r), r);
  render();
}

void LogPane::show_rank(int rank) {
  const int i = rank_filter->findData(rank);
  rank_filter->setCurrentIndex(i < 0 ? 0 : i);
}

void LogPane::add(const events::Message& m) {
  if (m.kind == events::Kind::Log) {
    const auto l = events::LogLine::parse(m);
    append({l.rank, QString::fromStdString(l.text)});
  } else if (m.kind == events::Kind::Error) {
    const auto e = events::Error::parse(m);
    if (e.kind == events::ErrorKind::Cancelled) return append({e.rank, tr("stopped as asked")});
    // A rank that lost its peer is a consequence; the launcher names the one that really failed.
    append({e.rank, QString("%1: %2").arg(events::error_kind_name(e.kind), QString::fromStdString(e.message)),
            e.kind != events::ErrorKind::LostPeer});
  }
}

void LogPane::note(const QString& line) { append({-1, line}); }

void LogPane::append(const Line& l) {
  lines_.push_back(l);
  if (lines_.size() > kKeptLines) lines_.pop_front();
  if (shown(l)) {
    const QString html = l.text.toHtmlEscaped();
    text->appendHtml(l.failure ? QString("<span style=\"background-color:#fadbd8; color:#922b21;\">%1%2</span>")
                                     .arg(prefix(l.rank).toHtmlEscaped(), html)
                               : QString("<span style=\"color:#566573;\">%1</span>%2")
                                     .arg(prefix(l.rank).toHtmlEscaped(), html));
  }
  update_title();
}

bool LogPane::shown(const Line& l) const {
  const int rank = rank_filter->currentData().isValid() ? rank_filter->currentData().toInt() : -1;
  return rank < 0 || l.rank == rank;
}

void LogPane::render() {
  text->clear();
  std::deque<Line> all;
  all.swap(lines_);
  for (const auto& l : all) append(l);
  update_title();  // also with no line yet: the toggle always says what it is
}

void LogPane::update_title() {
  int failures = 0;
  for (const auto& l : lines_) failures += l.failure;
  const int n = int(lines_.size());
  const QString count = n == 1 ? tr("1 line") : tr("%1 lines").arg(n);
  toggle->setText(failures ? tr("Log (%1, %2 about the failure)").arg(count).arg(failures) : tr("Log (%1)").arg(count));
}

void LogPane::finish(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  if (outcome.exit_code == 0 || outcome.kind == events::ErrorKind::Cancelled) return;
  if (outcome.failed_rank >= 0 && size_t(outcome.failed_rank) < ranks.size()) {
    // The lines its report quotes: the last ones it printed.
    size_t left = ranks[size_t(outcome.failed_rank)].log_tail.size();
    for (auto it = lines_.rbegin(); it != lines_.rend() && left > 0; ++it)
      if (it->rank == outcome.failed_rank) it->failure = true, --left;
  }
  const QString first = QString::fromStdString(outcome.message).section('\n', 0, 0);
  lines_.push_back({-1, first, true});
  render();
  toggle->setChecked(true);  // the failure is worth seeing
}

bool LogPane::save(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) return false;
  QTextStream out(&f);
  const size_t from = lines_.size() > size_t(kSavedLines) ? lines_.size() - size_t(kSavedLines) : 0;
  for (size_t i = from; i < lines_.size(); ++i)
    out << (lines_[i].failure ? "! " : "  ") << prefix(lines_[i].rank) << lines_[i].text << '\n';
  return out.status() == QTextStream::Ok && f.flush();
}

bool LogPane::load(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return false;
  static const QRegularExpression line_re(R"(^([! ]) \[(?:rank (\d+)|launcher)\] (.*)$)");
  std::deque<Line> lines;
  int ranks = 0;
  QTextStream in(&f);
  while (!in.atEnd()) {
    const auto m = line_re.match(in.readLine());
    if (!m.hasMatch()) continue;
    const int rank = m.captured(2).isEmpty() ? -1 : m.captured(2).toInt();
    ranks = std::max(ranks, rank + 1);
    lines.push_back({rank, m.captured(3), m.captured(1) == "!"});
  }
  start(ranks);
  for (const auto& l : lines) append(l);
  return true;
}

}  // namespace studio::gui
