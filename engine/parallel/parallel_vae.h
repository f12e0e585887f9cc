// Patch-parallel VAE decoding: the latents split by rows across the ranks of a group (any count; the
// first h % n ranks take one row more), one halo row exchanged with each neighbour before every
// convolution, group-norm statistics summed across the ranks, the causal caches kept per rank, and each
// decoded batch of frames gathered to the group's rank 0. The result is the one-process decode's.
#pragma once
#include <functional>
#include <memory>
#include <utility>

#include <ATen/core/Tensor.h>

#include "models/vae_decoder.h"
#include "parallel/comm.h"

namespace studio::parallel {

// The row exchange of parallel VAE decoding and encoding over `group`'s ranks.
std::unique_ptr<models::RowExchange> row_exchange(Group& group);

// z [B, C, F, h, w], whole, on every rank of `group`. `on_batch` is called on group rank 0 only, with
// each batch whole ([B, out_channels, frames, H, W], as VaeDecoder::decode_batches hands them out).
// InputError when the group has more ranks than the latents have rows. `progress` hears this rank's own
// band of rows.
void decode_by_rows(const models::VaeDecoder& vae, Group& group, const at::Tensor& z,
                    const std::function<void(const at::Tensor&)>& on_batch,
                    const models::DecodeProgress& progress = {});

}  // namespace studio::parallel
