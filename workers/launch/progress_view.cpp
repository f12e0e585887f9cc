#include "workers/launch/progress_view.h"

#include "plan/human_bytes.h"

namespace studio::workers {

std::string rank_status_line(const RankView& r) {
  char s[320];
  int n = std::snprintf(s, sizeof s, "rank %d  %-9s", r.rank, r.phase.c_str());
  if (r.phase_parts > 0) {  // the steps are done: how far into this phase (the decode's parts)
    n += std::snprintf(s + n, sizeof s - size_t(n), "  %d/%d (%d%%)", r.phase_part, r.phase_parts,
                       100 * r.phase_part / r.phase_parts);
  } else if (r.total > 0) {
    n += std::snprintf(s + n, sizeof s - size_t(n), "  step %d/%d  %.2f s/step", r.step, r.total, r.step_seconds);
    if (r.step > 0 && r.step < r.total)
      n += std::snprintf(s + n, sizeof s - size_t(n), "  ETA %.0f s", r.eta_seconds());
    if (r.cached) n += std::snprintf(s + n, sizeof s - size_t(n), "  reused %d", r.reused_calls);
  }
  const auto& m = r.resources;
  // While decoding (often the rank's peak, sampled between its parts), the job's peak so far as well.
  auto with_peak = [&](const char* what, uint64_t now, uint64_t peak) {
    n += std::snprintf(s + n, sizeof s - size_t(n), "  %s %s", what, plan::human_bytes(now).c_str());
    if (r.phase_parts > 0 && peak > now)
      n += std::snprintf(s + n, sizeof s - size_t(n), " (peak %s)", plan::human_bytes(peak).c_str());
  };
  if (m.device_allocated) with_peak("GPU", m.device_allocated, m.device_peak);
  if (m.host_rss) with_peak("RSS", m.host_rss, m.host_peak);
  if (m.bytes_sent || m.bytes_received)
    std::snprintf(s + n, sizeof s - size_t(n), "  sent %s  received %s", plan::human_bytes(m.bytes_sent).c_str(),
                  plan::human_bytes(m.bytes_received).c_str());
  return s;
}

ProgressView::ProgressView(std::FILE* out, bool live) : out_(out), live_(live) {}

void ProgressView::erase() {
  for (; drawn_ > 0; --drawn_) std::fputs("\x1b[1A\x1b[2K", out_);  // up one line, clear it
}

void ProgressView::draw(const std::vector<RankView>& ranks) {
  erase();
  for (const auto& r : ranks) std::fprintf(out_, "%s\n", rank_status_line(r).c_str());
  drawn_ = int(ranks.size());
  std::fflush(out_);
  last_draw_ = std::chrono::steady_clock::now();
}

void ProgressView::print_line(const std::string& line, const std::vector<RankView>& ranks) {
  if (live_) erase();
  std::fprintf(out_, "%s\n", line.c_str());
  if (live_) draw(ranks);
  std::fflush(out_);
}

void ProgressView::message(const events::Message& m, const std::vector<RankView>& ranks) {
  const int rank = m.body.value("rank", -1);
  const std::string who = "[rank " + std::to_string(rank) + "] ";
  switch (m.kind) {
    case events::Kind::Log: {
      // Rank 0 narrates the job; of the others, what they write to stderr (their errors, warnings).
      const std::string text = m.body.value("text", "");
      if (m.body.contains("stream")) print_line(text.rfind("[rank ", 0) == 0 ? text : who + text, ranks);
      else if (rank == 0) print_line(who + text, ranks);
      break;
    }
    case events::Kind::Progress:
      if (!live_) print_line("[" + rank_status_line(ranks[size_t(rank)]) + "]", ranks);
      break;
    case events::Kind::Phase: {
      // A phase's parts (the decode's tiles or batches): a line at each tenth of them, not each part.
      const int part = m.body.value("part", 0), parts = m.body.value("parts", 0);
      if (!live_ && parts > 0 && (part == parts || part * 10 / parts != (part - 1) * 10 / parts))
        print_line("[" + rank_status_line(ranks[size_t(rank)]) + "]", ranks);
      break;
    }
    default: break;
  }
}

void ProgressView::note(const std::string& line, const std::vector<RankView>& ranks) {
  print_line("dit-launch: " + line, ranks);
}

void ProgressView::tick(const std::vector<RankView>& ranks) {
  if (live_ && std::chrono::steady_clock::now() - last_draw_ > std::chrono::milliseconds(250)) draw(ranks);
}

void ProgressView::finish(const std::vector<RankView>& ranks) {
  if (live_) draw(ranks);
}

}  // namespace studio::workers
