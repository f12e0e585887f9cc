#include "parallel/sequence.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include "compat/torch_compat.h"
#include "parallel/attention.h"

namespace studio::parallel {

using Tokens = models::Tokens;

int64_t SequenceLayout::text_valid(int part) const {
  return std::clamp<int64_t>(text - int64_t(part) * text_chunk(), 0, text_chunk());
}

int64_t SequenceLayout::latent_valid(int part) const {
  return std::clamp<int64_t>(latent - int64_t(part) * latent_chunk(), 0, latent_chunk());
}

at::Tensor SequenceLayout::row_valid(int part) const {
  auto valid = at::zeros({text_chunk() + latent_chunk()}, at::kBool);
  valid.narrow(0, 0, text_valid(part)).fill_(true);
  valid.narrow(0, text_chunk(), latent_valid(part)).fill_(true);
  return valid;
}

SequenceParallel::SequenceParallel(Mesh& mesh, const SequenceLayout& layout, const at::Device& device)
    : mesh_(mesh), layout_(layout) {
  const auto& c = mesh.coords();
  const int U = mesh.config().ulysses_degree;
  part_ = plan::sequence_part(c.ring, c.ulysses, mesh.config());
  if (layout.text % layout.parts == 0 && layout.latent % layout.parts == 0) return;
  // Padded keys are left out of attention rather than masked: the rows of each ring position's block
  // that hold real tokens, made once here on the device.
  for (int ring_pos = 0; ring_pos < mesh.config().ring_degree; ++ring_pos) {
    std::vector<at::Tensor> valid;
    for (int u = 0; u < U; ++u) valid.push_back(layout_.row_valid(plan::sequence_part(ring_pos, u, mesh.config())));
    key_rows_.push_back(at::cat(valid, 0).nonzero().flatten().to(device));
  }
}

SequenceParallel& SequenceParallel::reuse(std::unique_ptr<SequenceParallel>& slot, Mesh& mesh,
                                          const SequenceLayout& layout, const at::Device& device) {
  if (!slot || !(slot->layout_ == layout)) slot = std::make_unique<SequenceParallel>(mesh, layout, device);
  return *slot;
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
  return {chunk_of(full.latent, layout_.latent_chunk(), layout_.parts, part_),
          layout_.text == 0 ? full.text : chunk_of(full.text, layout_.text_chunk(), layout_.parts, part_)};
}

at::Tensor SequenceParallel::shard_latent_table(const at::Tensor& table, double pad) const {
  const int64_t total = layout_.latent_chunk() * layout_.parts;
  auto padded = total > table.size(0)
                    ? at::cat({table, at::full({total - table.size(0), table.size(1)}, pad, table.options())}, 0)
                    : table;
  return padded.narrow(0, int64_t(part_) * layout_.latent_chunk(), layout_.latent_chunk());
}

models::Conditioning SequenceParallel::shard(const models::Conditioning& c) const {
  if (!c.token_rows.defined()) return c;
  auto mine = c;
  mine.token_rows = shard_latent_table(c.token_rows.unsqueeze(1), 0).squeeze(1);
  return mine;
}

std::pair<at::Tensor, at::Tensor> SequenceParallel::shard_rope(const models::Positions& pos) const {
  if (!pos.rope_cos.defined()) return {};
  return {shard_latent_table(pos.rope_cos, 1.0), shard_latent_table(pos.rope_sin, 0.0)};
}

at::Tensor SequenceParallel::gather_latent(const at::Tensor& local) const {
  auto parts = mesh_.group(plan::Dim::Sequence).all_gather(local);
  return at::cat(parts, 1).narrow(1, 0, layout_.latent);
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

  // The keys and values of the block that ring position `src` holds, less its padding rows.
  auto real = [&](const at::Tensor& x, int64_t src) {
    return key_rows_.empty() ? x : x.index_select(2, key_rows_[size_t(src)]);
  };

  at::Tensor out;
  if (R == 1) {
    out = compat::attention(qh, real(kh, 0), real(vh, 0));
  } else {
    Partial acc;
    at::Tensor kv = at::stack({kh, vh});
    int64_t src = ring.rank();
    for (int64_t step = 0; step < R; ++step) {
      // The next block travels while this one is attended to.
      at::Tensor next;
      PendingBatch transfer;
      if (step + 1 < R) {
        next = at::empty_like(kv);
        transfer = ring.start({{PeerOp::Send, kv, int((ring.rank() + 1) % R)},
                               {PeerOp::Recv, next, int((ring.rank() + R - 1) % R)}});
      }
      if (key_rows_.empty() || key_rows_[size_t(src)].numel() > 0)  // a block may be all padding
        merge(acc, attend_block(qh, real(kv[0], src), real(kv[1], src)));
      transfer.wait();
      kv = next;
      src = (src + R - 1) % R;
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
