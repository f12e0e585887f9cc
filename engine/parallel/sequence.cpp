#include "parallel/sequence.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include "compat/torch_compat.h"
#include "parallel/attention.h"

namespace studio::parallel {

using Tokens = models::CogVideoXTransformer::Tokens;

int64_t SequenceLayout::text_valid(int part) const {
  return std::clamp<int64_t>(text - int64_t(part) * text_chunk(), 0, text_chunk());
}

int64_t SequenceLayout::video_valid(int part) const {
  return std::clamp<int64_t>(video - int64_t(part) * video_chunk(), 0, video_chunk());
}

at::Tensor SequenceLayout::row_valid(int part) const {
  auto valid = at::zeros({text_chunk() + video_chunk()}, at::kBool);
  valid.narrow(0, 0, text_valid(part)).fill_(true);
  valid.narrow(0, text_chunk(), video_valid(part)).fill_(true);
  return valid;
}

SequenceParallel::SequenceParallel(Mesh& mesh, const SequenceLayout& layout) : mesh_(mesh), layout_(layout) {
  const auto& c = mesh.coords();
  part_ = c.ring * mesh.config().ulysses_degree + c.ulysses;
}

namespace {

// Rows [part * chunk, (part + 1) * chunk) of x's dim 1, zero-padded past its end.
at::Tensor chunk_of(const at::Tensor& x, int64_t chunk, int parts, int part) {
  const int64_t pad = chunk * parts - x.size(1);
  std::vector<int64_t> spec(size_t(2 * (x.dim() - 2)), 0);  // trailing dims unpadded
  spec.push_back(0);
  spec.push_back(pad);
  const auto padded = pad > 0 ? at::constant_pad_nd(x, spec) : x;
  return padded.narrow(1, int64_t(part) * chunk, chunk);
}

}  // namespace

Tokens SequenceParallel::shard(const Tokens& full) const {
  return {chunk_of(full.video, layout_.video_chunk(), layout_.parts, part_),
          chunk_of(full.text, layout_.text_chunk(), layout_.parts, part_)};
}

at::Tensor SequenceParallel::shard_video_table(const at::Tensor& table, double pad) const {
  const int64_t total = layout_.video_chunk() * layout_.parts;
  auto padded = total > table.size(0)
                    ? at::cat({table, at::full({total - table.size(0), table.size(1)}, pad, table.options())}, 0)
                    : table;
  return padded.narrow(0, int64_t(part_) * layout_.video_chunk(), layout_.video_chunk());
}

std::pair<at::Tensor, at::Tensor> SequenceParallel::shard_rope(const models::Positions& pos) const {
  if (!pos.rope_cos.defined()) return {};
  return {shard_video_table(pos.rope_cos, 1.0), shard_video_table(pos.rope_sin, 0.0)};
}

at::Tensor SequenceParallel::gather_video(const at::Tensor& local) const {
  auto parts = mesh_.group(plan::Dim::Sequence).all_gather(local);
  return at::cat(parts, 1).narrow(1, 0, layout_.video);
}

models::AttentionFn SequenceParallel::attention() const {
  return [this](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) { return attend(q, k, v); };
}

at::Tensor SequenceParallel::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
  Group& ulysses = mesh_.group(plan::Dim::Ulysses);
  Group& ring = mesh_.group(plan::Dim::Ring);
  const int64_t U = ulysses.size(), R = ring.size();
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), d = q.size(3);
  const int64_t Hp = (H + U - 1) / U * U;  // heads padded with empty ones to divide among the Ulysses ranks

  // Sequence -> heads: each Ulysses rank gets Hp/U heads of the whole Ulysses group's rows.
  auto to_heads = [&](const at::Tensor& x) {
    at::Tensor xp = Hp == H ? x : at::constant_pad_nd(x, {0, 0, 0, 0, 0, Hp - H});
    if (U == 1) return xp;
    auto parts = xp.reshape({B, U, Hp / U, L, d}).permute({1, 0, 2, 3, 4});
    return ulysses.all_to_all(parts).permute({1, 2, 0, 3, 4}).reshape({B, Hp / U, U * L, d});
  };
  const auto qh = to_heads(q), kh = to_heads(k), vh = to_heads(v);

  // The rows a Ulysses group holds, for the ring position that holds them.
  auto valid_of = [&](int64_t ring_pos) {
    std::vector<at::Tensor> m;
    for (int64_t u = 0; u < U; ++u) m.push_back(layout_.row_valid(int(ring_pos * U + u)));
    return at::cat(m, 0).to(q.device());
  };
  const bool padded = layout_.text % layout_.parts != 0 || layout_.video % layout_.parts != 0;

  at::Tensor out;
  if (R == 1 && !padded) {
    out = compat::attention(qh, kh, vh);
  } else {
    Partial acc;
    at::Tensor kv = at::stack({kh, vh});
    int64_t src = ring.rank();
    for (int64_t step = 0; step < R; ++step) {
      merge(acc, attend_block(qh, kv[0], kv[1], padded ? valid_of(src) : at::Tensor()));
      if (step + 1 < R) {
        at::Tensor next = at::empty_like(kv);
        ring.exchange(kv, int((ring.rank() + 1) % R), next, int((ring.rank() + R - 1) % R));
        kv = next;
        src = (src + R - 1) % R;
      }
    }
    out = acc.out.to(q.scalar_type());
  }
  // Heads -> sequence.
  if (U > 1) {
    auto parts = out.reshape({B, Hp / U, U, L, d}).permute({2, 0, 1, 3, 4});
    out = ulysses.all_to_all(parts).permute({1, 0, 2, 3, 4}).reshape({B, Hp, L, d});
  }
  return Hp == H ? out : out.narrow(1, 0, H);
}

}  // namespace studio::parallel
