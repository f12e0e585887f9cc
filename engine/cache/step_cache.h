// What the step caches share (cache/first_block_cache.h, cache/tea_cache.h): the call's share of the rows
// in a parallel run, the relative change they decide on (summed over every rank of the call, so that each
// takes the one-process decision and all take the same one), reusing what the blocks added at the last
// full call, and the record of what each call did.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "plan/job.h"

namespace studio::cache {

// This process's part of a call: how many of its latent rows are real (the rest padding; -1: all of
// them), and how to sum a small tensor over every process that holds part of the call (in one process:
// unset, the tensor as it is). `over_sequence`: the tensor sums a part of the latent rows (add the
// sequence group's parts) rather than something every sequence rank holds whole.
struct CallShare {
  int64_t real_latent_rows = -1;
  std::function<at::Tensor(const at::Tensor&, bool over_sequence)> sum_over_call;
};

class StepCache : public models::BlockCache {
 public:
  // Before each call (the sequence layout is known at call time).
  void set_share(CallShare share) { share_ = std::move(share); }
  // For each call so far: whether every block ran, and the relative change it was decided on (NaN where
  // there was none to measure).
  const std::vector<bool>& full_calls() const { return full_calls_; }
  const std::vector<double>& changes() const { return changes_; }
  virtual const char* name() const = 0;  // "First-Block Cache"

 protected:
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  // mean|now - prev| / mean|prev| over the whole call (`latent_rows`: both are [B, latent rows held, ...]).
  double relative_change(const at::Tensor& now, const at::Tensor& prev, bool latent_rows) const;
  // The real (unpadded) latent rows of a [B, latent rows held, ...] tensor.
  at::Tensor real_rows(const at::Tensor& t) const;
  // A small tensor of sums, summed over the call's ranks (CallShare::sum_over_call), on the host.
  at::Tensor summed_over_call(const at::Tensor& sums, bool over_sequence) const;
  // What the blocks added to the latent rows at the last full call.
  const at::Tensor& kept_latent() const { return rest_latent_; }
  // Blocks [first, num_blocks) over x, keeping what they add to the latent and text rows for reuse.
  void run_rest(const models::DitModel& model, size_t first, models::Tokens& x, const models::Conditioning& c,
                const at::Tensor& rope_cos, const at::Tensor& rope_sin, const models::AttentionFn& attention);
  // Adds what the blocks added at the last full call.
  void reuse(models::Tokens& x) const;
  // Records the call; returns `full`.
  bool record(bool full, double change);

 private:
  CallShare share_;
  at::Tensor rest_latent_, rest_text_;
  std::vector<bool> full_calls_;
  std::vector<double> changes_;
};

// A run's cache contexts: none; one, for what the family's reference runs as one call (the whole batch:
// both guidance branches, every video); or two, [unconditional, conditional], where the reference calls the
// transformer once per guidance branch (plan::Family::calls_per_guidance_branch, diffusers' "uncond"
// and "cond" contexts): each decides on, and reuses, its own branch's calls alone.
using StepCaches = std::vector<std::unique_ptr<StepCache>>;

// The contexts a job asks for, for a model of this folder.
StepCaches make_step_caches(const plan::JobSpec& job, const plan::ModelFolder& model);

}  // namespace studio::cache
