// What each rank of a run prints, live: its logger's lines and its stderr, with the launcher's own
// remarks; filterable by rank, collapsible, the failure's lines highlighted once the run ends. Each run
// keeps its last lines in its folder (log.txt), which load() shows again.
#pragma once
#include <QComboBox>
#include <QPlainTextEdit>
#include <QToolButton>
#include <QWidget>

#include <deque>
#include <vector>

#include "workers/events/messages.h"
#include "workers/launch/supervisor.h"

namespace studio::gui {

class LogPane : public QWidget {
  Q_OBJECT
 public:
  struct Line {
    int rank = -1;  // -1: the launcher
    QString text;
    bool failure = false;  // one of the lines that tell why the run failed
  };
  static constexpr size_t kKeptLines = 5000;   // per run, in memory
  static constexpr int kSavedLines = 1000;     // per run, in its log.txt

  explicit LogPane(QWidget* parent = nullptr);
  void start(int ranks);  // a new run: the pane empties, the filter offers its ranks
  void add(const events::Message& m);  // Log (a rank's logger or stderr) and Error events; others are ignored
  void note(const QString& line);      // the launcher's remark
  // Marks the failed rank's last lines (the ones its failure report quotes) and the failure itself, and
  // opens the pane to show them.
  void finish(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks);
  bool save(const QString& path) const;
  bool load(const QString& path);  // a run's saved log, in place of the pane's
  const std::deque<Line>& lines() const { return lines_; }
  void show_rank(int rank);  // -1: every rank
  bool expanded() const { return toggle->isChecked(); }

  QToolButton* toggle;       // opens and closes the pane
  QComboBox* rank_filter;    // "All ranks", "Rank 0", ...
  QPlainTextEdit* text;      // the lines shown

 private:
  void append(const Line& l);
  bool shown(const Line& l) const;
  void render();
  void update_title();
  QWidget* body_;
  std::deque<Line> lines_;
};

}  // namespace studio::gui
