// Sequence parallelism over the joint sequence a family attends over (text tokens, then latent tokens:
// video or image patches). Text and latent rows are each cut into P equal chunks (the last ones padded), so
// that every rank of the sequence group holds [text chunk, latent chunk] of one length and attention sees the same tokens as in
// one process (field note 5); padded keys are masked in every attention and padded rows dropped when
// gathering, so any token count works (field notes 1 and 3).
//
// Attention: Ulysses (all-to-all from sequence to heads within the Ulysses group; a head count that does
// not divide is padded with empty heads), then Ring across the ring group (key/value blocks passed around,
// partial results merged by log-sum-exp), then all-to-all back. Ulysses alone, Ring alone, or both (USP).
#pragma once
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "parallel/mesh.h"

namespace studio::parallel {

struct SequenceLayout {
  // The rows attention sees: `text` is 0 for a family whose text is reached by cross-attention (Wan); its
  // text rows are then kept whole on every rank.
  int64_t text = 0, latent = 0;
  int parts = 1;
  static SequenceLayout of(const models::DitModel& model, int64_t text_rows, int64_t latent_rows, int parts) {
    return {model.joint_text() ? text_rows : 0, latent_rows, parts};
  }
  int64_t text_chunk() const { return (text + parts - 1) / parts; }
  int64_t latent_chunk() const { return (latent + parts - 1) / parts; }
  int64_t text_valid(int part) const;
  int64_t latent_valid(int part) const;
  at::Tensor row_valid(int part) const;  // [text_chunk + latent_chunk] bool
  bool operator==(const SequenceLayout& o) const { return text == o.text && latent == o.latent && parts == o.parts; }
};

class SequenceParallel {
 public:
  // `device`: where the activations are (the padding tables are made there once).
  SequenceParallel(Mesh& mesh, const SequenceLayout& layout, const at::Device& device);
  // The one in `slot`, made anew only when the layout changes: its tables are made once per job, not
  // copied to the device at every step.
  static SequenceParallel& reuse(std::unique_ptr<SequenceParallel>& slot, Mesh& mesh, const SequenceLayout& layout,
                                 const at::Device& device);

  int part() const { return part_; }
  const SequenceLayout& layout() const { return layout_; }
  // This rank's text and latent rows, zero-padded to the chunk sizes (text outside the sequence: whole).
  models::Tokens shard(const models::Tokens& full) const;
  // Rows of a per-latent-token table (RoPE cos/sin) for this rank; padding rows are `pad`.
  at::Tensor shard_latent_table(const at::Tensor& table, double pad) const;
  // The call's conditioning for this rank's latent rows (where it differs per token; padding takes row 0's).
  models::Conditioning shard(const models::Conditioning& c) const;
  // This rank's RoPE rows (padding rotates by nothing); undefined when the model has no RoPE.
  std::pair<at::Tensor, at::Tensor> shard_rope(const models::Positions& pos) const;
  // Every rank's latent rows [B, latent_chunk, F] -> [B, latent, F], padding dropped.
  at::Tensor gather_latent(const at::Tensor& local) const;
  // The attention over the whole sequence group, for run_block.
  models::AttentionFn attention() const;

 private:
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const;
  Mesh& mesh_;
  SequenceLayout layout_;
  int part_ = 0;
  std::vector<at::Tensor> key_rows_;  // per ring position: its block's real rows; empty when none is padded
};

}  // namespace studio::parallel
