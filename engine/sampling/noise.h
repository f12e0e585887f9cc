// Where random numbers come from. A seed gives torch's CPU generator (MT19937), drawn in
// the order the reference pipeline draws (initial latents, then the DPM sampler's per-step noise), so a
// seeded run of one video equals a diffusers run given `generator=torch.Generator("cpu").manual_seed(seed)`;
// noise is always drawn on the CPU and then moved, so the device does not change the picture. Video i of
// a batch has its own generator, seeded seed + i, so it is the same video however the batch is split
// among data-parallel ranks. A file injects exactly the noise a reference run recorded instead.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

namespace studio::sampling {

class NoiseSource {
 public:
  virtual ~NoiseSource() = default;
  // The noise the sampler adds at `step`; the reference draws `draws` tensors there and keeps the last.
  virtual at::Tensor step_noise(int step, const std::vector<int64_t>& shape, int draws) = 0;
};

class SeededNoise : public NoiseSource {
 public:
  // Videos first_seed, first_seed + 1, ... (`videos` of them).
  explicit SeededNoise(uint64_t first_seed, int videos = 1);
  // shape[0] must be the number of videos; each row comes from its video's generator. Float32, CPU.
  at::Tensor draw(const std::vector<int64_t>& shape);
  int videos() const { return int(gens_.size()); }
  // A copy whose generators start where these are now and go their own way (a part run again draws the same).
  SeededNoise snapshot() const;
  at::Tensor step_noise(int step, const std::vector<int64_t>& shape, int draws) override;

 private:
  std::vector<at::Generator> gens_;
};

// scheduler_noise [steps, ...] recorded by a reference run.
class RecordedNoise : public NoiseSource {
 public:
  explicit RecordedNoise(at::Tensor per_step) : noise_(std::move(per_step)) {}
  at::Tensor step_noise(int step, const std::vector<int64_t>& shape, int draws) override;

 private:
  at::Tensor noise_;
};

}  // namespace studio::sampling
