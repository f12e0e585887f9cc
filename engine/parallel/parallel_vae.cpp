#include "parallel/parallel_vae.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/full.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>

#include "plan/error.h"

namespace studio::parallel {

namespace {

class GroupRows : public models::RowExchange {
 public:
  explicit GroupRows(Group& g) : group_(g) {}
  std::pair<at::Tensor, at::Tensor> halo(const at::Tensor& first, const at::Tensor& last) override {
    at::Tensor above = at::zeros_like(first), below = at::zeros_like(last);
    group_.neighbours(first, last, above, below);
    return {above, below};
  }
  at::Tensor sum(const at::Tensor& t) override {
    at::Tensor total;
    for (const auto& part : group_.all_gather(t)) total = total.defined() ? total + part : part.clone();
    return total;
  }
  at::Tensor gather(const at::Tensor& t, int64_t dim) override {
    // Sizes first, then every part padded to the largest (a collective takes one shape), then trimmed.
    const auto sizes = group_.all_gather(at::full({1}, double(t.size(dim)), t.options().dtype(at::kFloat)));
    int64_t most = 0;
    for (const auto& s : sizes) most = std::max(most, int64_t(s.item<float>()));
    std::vector<int64_t> pad(size_t(2 * (t.dim() - dim)), 0);
    pad.back() = most - t.size(dim);  // constant_pad_nd pads from the last dimension backwards
    const auto parts = group_.all_gather(at::constant_pad_nd(t, pad).contiguous());
    std::vector<at::Tensor> trimmed;
    for (size_t r = 0; r < parts.size(); ++r) trimmed.push_back(parts[r].narrow(dim, 0, int64_t(sizes[r].item<float>())));
    return at::cat(trimmed, dim);
  }
  bool at_top() const override { return group_.rank() == 0; }
  bool at_bottom() const override { return group_.rank() == group_.size() - 1; }

 private:
  Group& group_;
};

}  // namespace

std::unique_ptr<models::RowExchange> row_exchange(Group& group) { return std::make_unique<GroupRows>(group); }

void decode_by_rows(const models::VaeDecoder& vae, Group& group, const at::Tensor& z,
                    const std::function<void(const at::Tensor&)>& on_batch, const models::DecodeProgress& progress) {
  const int n = group.size();
  if (n == 1) return vae.decode_batches(z, on_batch, nullptr, progress);
  const int64_t h = z.size(3);
  if (h < n)
    throw InputError("parallel VAE decoding: " + std::to_string(n) + " ranks cannot share " + std::to_string(h) +
                     " latent rows (" + std::to_string(h * vae.spatial_compression()) +
                     " pixels); use at most " + std::to_string(h) + " ranks or a taller video");
  const auto [begin, end] = models::rows_of(h, group.rank(), n);
  GroupRows rows(group);
  const int64_t scale = vae.spatial_compression();
  vae.decode_batches(
      z.narrow(3, begin, end - begin).contiguous(),
      [&](const at::Tensor& mine) {
        // Rank 0 receives every other rank's rows of this batch, in order; one batch at a time.
        if (group.rank() != 0) return group.run({{PeerOp::Send, mine, 0}});
        std::vector<at::Tensor> parts{mine};
        std::vector<PeerOp> receives;
        for (int r = 1; r < n; ++r) {
          const auto [b, e] = models::rows_of(h, r, n);
          auto sizes = mine.sizes().vec();
          sizes[3] = (e - b) * scale;
          parts.push_back(at::empty(sizes, mine.options()));
          receives.push_back({PeerOp::Recv, parts.back(), r});
        }
        group.run(std::move(receives));
        on_batch(at::cat(parts, 3));
      },
      &rows, progress);
}

}  // namespace studio::parallel
