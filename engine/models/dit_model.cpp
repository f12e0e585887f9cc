#include "models/dit_model.h"

#include <ATen/ops/cat.h>

#include <vector>

#include "compat/torch_compat.h"

namespace studio::models {

AttentionFn local_attention() { return &compat::attention; }

StepInputs StepInputs::rows(int64_t first, int64_t count) const {
  StepInputs part;
  for (auto [from, to] : {std::pair{&latents, &part.latents}, std::pair{&text, &part.text}, std::pair{&text_2, &part.text_2},
                          std::pair{&text_valid, &part.text_valid}, std::pair{&text_2_valid, &part.text_2_valid},
                          std::pair{&timestep, &part.timestep}, std::pair{&pooled, &part.pooled},
                          std::pair{&guidance, &part.guidance}, std::pair{&condition, &part.condition},
                          std::pair{&image, &part.image}})
    if (from->defined()) *to = from->narrow(0, first, count);
  return part;
}

Conditioning Conditioning::for_rows(const at::Tensor& rows) const {
  Conditioning part = *this;
  if (token_rows.defined()) part.token_rows = token_rows.index_select(0, rows);
  return part;
}

void DitModel::set_block_weights(std::shared_ptr<BlockWeights> w) {
  block_weights_ = std::move(w);
  if (block_weights_)
    for (size_t i = 0; i < num_blocks(); ++i) block_weights_->keep(i, block_tensors(i));
}

void DitModel::block_loaded() {
  if (block_weights_) block_weights_->keep(num_blocks() - 1, block_tensors(num_blocks() - 1));
}

void DitModel::run_block(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos,
                         const at::Tensor& rope_sin, const AttentionFn& attention) const {
  if (!block_weights_) return block_forward(i, x, c, rope_cos, rope_sin, attention);
  block_weights_->before(i);
  block_forward(i, x, c, rope_cos, rope_sin, attention);
  block_weights_->after(i);
}

bool DitModel::run_blocks(Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                          const AttentionFn& attention, BlockCache* cache) const {
  if (cache) return cache->run_blocks(*this, x, c, rope_cos, rope_sin, attention);
  for (size_t i = 0; i < num_blocks(); ++i) run_block(i, x, c, rope_cos, rope_sin, attention);
  return true;
}

at::Tensor DitModel::forward(const StepInputs& in, const Positions& pos, const AttentionFn& attention,
                             BlockCache* cache) const {
  if (ragged_text() && in.latents.size(0) > 1) {
    std::vector<at::Tensor> out;
    for (int64_t b = 0; b < in.latents.size(0); ++b) out.push_back(forward(in.rows(b, 1), pos, attention, cache));
    return at::cat(out, 0);
  }
  const auto c = condition(in);
  auto x = embed(in, pos);
  run_blocks(x, c, pos.rope_cos, pos.rope_sin, attention, cache);
  return unpatchify(project_out(x.latent, c), in.latents);
}

}  // namespace studio::models
