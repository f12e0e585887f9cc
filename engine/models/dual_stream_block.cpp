#include "models/dual_stream_block.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/layer_norm.h>

namespace studio::models {

namespace {

constexpr double kNormEps = 1e-6;

at::Tensor layer_norm(const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}, {}, {}, kNormEps); }

at::Tensor heads(const at::Tensor& x, int64_t head_dim) { return x.unflatten(-1, {-1, head_dim}).transpose(1, 2); }

}  // namespace

DualStreamBlock DualStreamBlock::load(const WeightSource& w, const std::string& b, int64_t D, int64_t hd, int64_t mlp) {
  auto stream = [&](const char* norm, const char* q, const char* k, const char* v, const char* out, const char* nq,
                    const char* nk, const char* ff) {
    return Stream{Linear::load(w, b + norm + ".linear", D, 6 * D),
                  Linear::load(w, b + "attn." + q, D, D),
                  Linear::load(w, b + "attn." + k, D, D),
                  Linear::load(w, b + "attn." + v, D, D),
                  Linear::load(w, b + "attn." + out, D, D),
                  Linear::load(w, b + ff + ".net.0.proj", D, mlp),
                  Linear::load(w, b + ff + ".net.2", mlp, D),
                  RmsNorm::load(w, b + "attn." + nq, hd, kNormEps),
                  RmsNorm::load(w, b + "attn." + nk, hd, kNormEps)};
  };
  return {stream("norm1", "to_q", "to_k", "to_v", "to_out.0", "norm_q", "norm_k", "ff"),
          stream("norm1_context", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out", "norm_added_q",
                 "norm_added_k", "ff_context")};
}

at::Tensor DualStreamBlock::modulated_latent(const at::Tensor& x, const at::Tensor& act) const {
  const auto m = latent.modulation(act).unsqueeze(1).chunk(6, -1);
  return at::addcmul(m[0], layer_norm(x), 1 + m[1]);
}

void DualStreamBlock::operator()(Tokens& x, const at::Tensor& act, const at::Tensor& cos, const at::Tensor& sin,
                                 const AttentionFn& attention, int64_t hd) const {
  const int64_t T = x.text.size(1);
  const auto ml = latent.modulation(act).unsqueeze(1).chunk(6, -1);
  const auto mt = text.modulation(act).unsqueeze(1).chunk(6, -1);
  const auto nl = at::addcmul(ml[0], layer_norm(x.latent), 1 + ml[1]);
  const auto nt = at::addcmul(mt[0], layer_norm(x.text), 1 + mt[1]);
  // The latent rows rotated (their norm and rotation one pass), the text rows as they are.
  auto joint = [&](const Linear& l, const Linear& t, const RmsNorm* l_norm, const RmsNorm* t_norm) {
    auto hl = heads(l(nl), hd), ht = heads(t(nt), hd);
    if (l_norm) hl = (*l_norm)(hl, {cos, sin}), ht = (*t_norm)(ht);
    return at::cat({ht, hl}, 2);  // text rows first
  };
  const auto q = joint(latent.q, text.q, &latent.norm_q, &text.norm_q);
  const auto k = joint(latent.k, text.k, &latent.norm_k, &text.norm_k);
  const auto v = joint(latent.v, text.v, nullptr, nullptr);
  const auto out = attention(q, k, v).transpose(1, 2).flatten(2);
  auto finish = [](at::Tensor& h, const Stream& s, const std::vector<at::Tensor>& m, const at::Tensor& attn) {
    h = at::addcmul(h, m[2], s.out(attn));
    const auto n = at::addcmul(m[3], layer_norm(h), 1 + m[4]);
    h = at::addcmul(h, m[5], s.ff_out(s.ff_in.gelu_tanh(n)));
  };
  finish(x.latent, latent, ml, out.narrow(1, T, out.size(1) - T));
  finish(x.text, text, mt, out.narrow(1, 0, T));
}

std::vector<at::Tensor> DualStreamBlock::tensors() const {
  auto out = tensors_of(latent.modulation, latent.q, latent.k, latent.v, latent.out, latent.ff_in, latent.ff_out,
                        latent.norm_q, latent.norm_k);
  for (auto& t : tensors_of(text.modulation, text.q, text.k, text.v, text.out, text.ff_in, text.ff_out, text.norm_q,
                            text.norm_k))
    out.push_back(t);
  return out;
}

}  // namespace studio::models
