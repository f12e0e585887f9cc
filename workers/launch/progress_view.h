// dit-launch's view of a running job on its terminal: on a terminal, one live line per rank (phase,
// step, time per step, ETA, memory, traffic) redrawn in place under the log; otherwise plain lines,
// one per event, for log files and pipes.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "workers/launch/supervisor.h"

namespace studio::workers {

class ProgressView {
 public:
  ProgressView(std::FILE* out, bool live);
  void message(const events::Message& m, const std::vector<RankView>& ranks);
  void note(const std::string& line, const std::vector<RankView>& ranks);
  // Live mode: redraws the rank lines (at most a few times a second).
  void tick(const std::vector<RankView>& ranks);
  void finish(const std::vector<RankView>& ranks);

 private:
  void print_line(const std::string& line, const std::vector<RankView>& ranks);
  void draw(const std::vector<RankView>& ranks);
  void erase();

  std::FILE* out_;
  bool live_;
  int drawn_ = 0;  // rank lines currently on screen
  std::chrono::steady_clock::time_point last_draw_;
};

// One rank as a line: its number and phase, then the step, seconds per step and ETA, its memory and its
// traffic, each where the rank has reported it.
std::string rank_status_line(const RankView& r);

}  // namespace studio::workers
