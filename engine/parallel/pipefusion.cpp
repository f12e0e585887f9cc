#include "parallel/pipefusion.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include "compat/torch_compat.h"
#include "parallel/sequence.h"

namespace studio::parallel {

using models::Tokens;

PipeFusionStage::PipeFusionStage(const models::DitModel& model, Mesh& mesh) : model_(model), mesh_(mesh) {
  stage_ = mesh.coords().pipefusion;
  stages_ = mesh.config().pipefusion_parallel_degree;
  const auto [first, end] = plan::stage_blocks(int(model.num_blocks()), stage_, stages_);
  first_ = size_t(first);
  end_ = size_t(end);
  keys_.resize(end_ - first_);
  values_.resize(end_ - first_);
}

at::Tensor PipeFusionStage::forward(int step, const models::StepInputs& in, const models::Positions& pos) {
  if (step < mesh_.config().warmup_steps) return synchronous(in, pos);
  return pipelined(in, pos);
}

PipeFusionStage::Step PipeFusionStage::step_of(const models::StepInputs& in) const {
  auto cond = model_.condition(in);
  const int64_t text_rows = model_.text_rows(in, cond);  // a picture's tokens travel with the text
  return {in.latents.size(0), text_rows, model_.token_grid(in.latents), std::move(cond),
          at::TensorOptions().dtype(model_.dtype()).device(model_.device())};
}

// The last stage's output, on every stage.
at::Tensor PipeFusionStage::share_output(at::Tensor out, const models::StepInputs& in, const Step& s) {
  Group& pf = mesh_.group(plan::Dim::PipeFusion);
  if (stage_ != stages_ - 1) out = at::empty(model_.output_shape(in.latents), s.opts);
  out = out.contiguous();
  pf.broadcast(out, stages_ - 1);
  return out;
}

at::Tensor PipeFusionStage::synchronous(const models::StepInputs& in, const models::Positions& pos) {
  Group& pf = mesh_.group(plan::Dim::PipeFusion);
  const Step s = step_of(in);
  const auto& [B, T, grid, call_cond, opts] = s;
  auto& sp = SequenceParallel::reuse(sequence_, mesh_,
                                     SequenceLayout::of(model_, T, grid.tokens(), mesh_.config().sp_degree()),
                                     opts.device());
  Tokens x;
  if (stage_ == 0) {
    x = sp.shard(model_.embed(in, pos));
  } else {
    x.text = at::empty({B, sp.layout().text == 0 ? T : sp.layout().text_chunk(), model_.width()}, opts);
    x.latent = at::empty({B, sp.layout().latent_chunk(), model_.width()}, opts);
    pf.run({{PeerOp::Recv, x.text, stage_ - 1}, {PeerOp::Recv, x.latent, stage_ - 1}});
  }
  const auto [cos, sin] = sp.shard_rope(pos);
  const auto cond = sp.shard(call_cond);
  const bool sequence_parallel = mesh_.config().sp_degree() > 1;
  for (size_t i = first_; i < end_; ++i) {
    // With one sequence rank, keep this step's keys and values for the pipelined steps that follow.
    models::AttentionFn attention = sp.attention();
    if (!sequence_parallel)
      attention = [this, i](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        keys_[i - first_] = k.clone();
        values_[i - first_] = v.clone();
        return compat::attention(q, k, v);
      };
    model_.run_block(i, x, cond, cos, sin, attention);
  }
  at::Tensor out;
  if (stage_ + 1 < stages_) {
    pf.run({{PeerOp::Send, x.text, stage_ + 1}, {PeerOp::Send, x.latent, stage_ + 1}});
  } else {
    out = model_.unpatchify(sp.gather_latent(model_.project_out(x.latent, cond)), in.latents);
  }
  return share_output(out, in, s);
}

at::Tensor PipeFusionStage::pipelined(const models::StepInputs& in, const models::Positions& pos) {
  Group& pf = mesh_.group(plan::Dim::PipeFusion);
  const Step s = step_of(in);
  const auto& [B, T, grid, cond, opts] = s;
  const int64_t patches = mesh_.config().num_pipeline_patch;
  Tokens full;
  if (stage_ == 0) full = model_.embed(in, pos);
  at::Tensor out;  // last stage: [B, latent tokens, patch features]
  // Text outside the attended sequence (cross-attention) is needed whole by every patch: it travels with
  // the first and is kept for the rest.
  const bool joint = model_.joint_text();
  at::Tensor text_whole;
  for (int64_t m = 0; m < patches; ++m) {
    // Patch m: token rows [r0, r1) of every frame; the text travels with the first patch.
    const int64_t r0 = m * grid.rows / patches, r1 = (m + 1) * grid.rows / patches;
    const auto rows = at::arange(r0 * grid.cols, r1 * grid.cols, at::kLong);
    const auto frames = at::arange(grid.frames, at::kLong) * (int64_t(grid.rows) * grid.cols);
    const auto idx = (frames.view({-1, 1}) + rows.view({1, -1})).reshape({-1}).to(model_.device());
    const int64_t n = idx.size(0), t = m == 0 ? T : 0;
    Tokens x;
    if (stage_ == 0) {
      x = {full.latent.index_select(1, idx), full.text.narrow(1, 0, t)};
    } else {
      x.latent = at::empty({B, n, model_.width()}, opts);
      x.text = at::empty({B, t, model_.width()}, opts);
      std::vector<PeerOp> ops;
      if (t > 0) ops.push_back({PeerOp::Recv, x.text, stage_ - 1});
      ops.push_back({PeerOp::Recv, x.latent, stage_ - 1});
      pf.run(std::move(ops));
    }
    if (!joint) {
      if (m == 0) text_whole = x.text;
      x.text = text_whole;
    }
    // Where the patch's keys go in the buffer: [text, latent] rows of the joint sequence, or latent rows.
    const auto rows_at = !joint ? idx : m == 0 ? at::cat({at::arange(T, idx.options()), idx + T}) : idx + T;
    at::Tensor cos, sin;
    if (pos.rope_cos.defined()) cos = pos.rope_cos.index_select(0, idx), sin = pos.rope_sin.index_select(0, idx);
    const auto patch_cond = cond.for_rows(idx);
    for (size_t i = first_; i < end_; ++i) {
      auto attention = [this, i, &rows_at](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        keys_[i - first_].index_copy_(2, rows_at, k);
        values_[i - first_].index_copy_(2, rows_at, v);
        return compat::attention(q, keys_[i - first_], values_[i - first_]);
      };
      model_.run_block(i, x, patch_cond, cos, sin, attention);
    }
    if (stage_ + 1 < stages_) {
      std::vector<PeerOp> ops;
      if (t > 0) ops.push_back({PeerOp::Send, x.text, stage_ + 1});  // with the first patch only
      ops.push_back({PeerOp::Send, x.latent, stage_ + 1});
      pf.run(std::move(ops));
    } else {
      auto patch = model_.project_out(x.latent, patch_cond);
      if (!out.defined()) out = at::empty({B, grid.tokens(), patch.size(2)}, patch.options());
      out.index_copy_(1, idx, patch);
    }
  }
  if (out.defined()) out = model_.unpatchify(out, in.latents);
  return share_output(out, in, s);
}

}  // namespace studio::parallel
