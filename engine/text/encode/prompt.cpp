#include "text/encode/prompt.h"

#include <cstdio>
#include <optional>

#include <ATen/ops/from_blob.h>

#include "compat/torch_compat.h"
#include "io/weights/lora.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/qwen_file.h"
#include "plan/single_file.h"
#include "text/encode/encoder_room.h"
#include "text/encode/t5_encoder.h"
#include "text/tokenize/t5_tokenizer.h"

namespace studio::text {

at::Tensor ids_tensor(std::vector<int64_t>& ids) {
  return at::from_blob(ids.data(), {1, int64_t(ids.size())}, at::kLong).clone();
}

void note_truncation(size_t untruncated, size_t kept, const std::string& what, const std::string& why, const Log& log) {
  if (untruncated > kept)
    log(what + " is " + std::to_string(untruncated) + " tokens; only the first " + std::to_string(kept) +
        " are used (" + why + ")");
}

namespace {

// What the device can give: free in the driver, and what the caching allocator holds but no tensor uses.
std::optional<double> device_room(const at::Device& device) {
  const auto mem = compat::device_memory(device);
  if (!mem) return std::nullopt;
  double room = double(mem->free_bytes);
  if (const auto a = compat::allocator_stats(device); a && a->reserved > a->allocated)
    room += double(a->reserved - a->allocated);
  return room;
}

}  // namespace

// The encoder goes to the CPU when the GPU cannot hold it (T5-XXL's 4.7B parameters in the real models), once what
// a serving worker keeps there is let go (encoder_room.h).
void choose_device(double parameters, const std::string& name, at::ScalarType& dtype, at::Device& device,
                   const Log& log) {
  const double need = parameters * double(c10::elementSize(dtype)) * 1.2;
  auto room = device_room(device);
  if (!room || *room >= need) return;
  char line[320];
  if (RoomForEncoders::make_room()) {
    std::snprintf(line, sizeof line, "%s has %.1f GiB free beside the transformer kept from the last run and the %s "
                  "text encoder needs about %.1f GiB: the transformer is let go, to load again after the encoders",
                  device.str().c_str(), *room / (1 << 30), name.c_str(), need / (1 << 30));
    log(line);
    room = device_room(device);
    if (!room || *room >= need) return;
  }
  std::snprintf(line, sizeof line,
                "%s has %.1f GiB free and the %s text encoder needs about %.1f GiB: encoding on the CPU",
                device.str().c_str(), *room / (1 << 30), name.c_str(), need / (1 << 30));
  log(line);
  device = at::kCPU;
  dtype = at::kFloat;
}

void require_text_parts(const plan::ModelFolder& model) {
  if (!model.can_encode_words())
    throw InputError(model.dir + ": " + plan::missing_text_parts(model) +
                     ", so --prompt cannot be encoded. Download the whole model folder, or pass --prompt_embeds FILE");
}

// T5 on each text in turn: [1, L, d_model] float32 each, with the ids.
io::WeightSet encoder_weights(const plan::ModelFolder& model, const std::string& part) {
  const auto file = model.weight_files.find(part);
  const bool t5 = part == model.t5_part(), qwen = part == "text_encoder" && plan::reads_qwen(model);
  auto weights = file == model.weight_files.end() ? io::WeightSet::open(plan::part_path(model, part), "model")
                 : t5   ? io::WeightSet::open_part_file(part, file->second, {"t5encoder", "t5"}, plan::t5_file_renames)
                 : qwen ? io::WeightSet::open_part_file(part, file->second, plan::kQwenGgufArchitectures,
                                                        plan::qwen_file_renames)
                        : io::WeightSet::open_part_file(part, file->second, {"clip"},
                                                        [](const std::set<std::string>&) { return plan::TensorRenames{}; });
  // The LoRAs' text-encoder modules, where the family takes them (io/weights/lora.h).
  if (!model.loras.empty())
    weights.add_deltas(io::lora_deltas(model, model.loras, weights.names(),
                                           t5 ? io::LoraTarget::T5Text : io::LoraTarget::ClipText));
  return weights;
}

std::string encoder_source(const plan::ModelFolder& model, const std::string& part) {
  const auto file = model.weight_files.find(part);
  return file == model.weight_files.end() ? plan::part_path(model, part) : file->second;
}

std::vector<std::pair<at::Tensor, at::Tensor>> encode_t5(const plan::ModelFolder& model,
                                                         const std::vector<std::pair<std::string, std::string>>& texts,
                                                         int max_length, at::ScalarType dtype, at::Device device,
                                                         const Log& log) {
  const auto tokenizer = T5Tokenizer::load(plan::part_path(model, model.t5_tokenizer_part()));
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  for (const auto& [what, text] : texts) {
    auto e = tokenizer.encode(text, size_t(max_length));
    note_truncation(e.untruncated, size_t(max_length) - 1, what + " (T5)",
                    "--max_sequence_length " + std::to_string(max_length), log);
    out.push_back({ids_tensor(e.ids), {}});
  }
  choose_device(model.text_encoder->parameters(), "T5", dtype, device, log);
  if (dtype == at::kHalf) {
    // T5's feed-forward outputs exceed float16's range (transformers keeps its `wo` in float32 for that);
    // bfloat16 has float32's range.
    log("the T5 text encoder runs in bfloat16: T5 overflows in float16");
    dtype = at::kBFloat16;
  }
  log("encoding with " + encoder_source(model, model.t5_part()) + " (T5, " +
      std::to_string(model.text_encoder->num_layers) + " layers) on " + device.str());
  auto weights = encoder_weights(model, model.t5_part());
  auto encoder = T5Encoder::load(weights, *model.text_encoder, dtype, device);
  for (auto& [ids, embeds] : out) embeds = encoder->forward(ids).to(at::kCPU, at::kFloat);
  return out;  // the encoder is released here
}

}  // namespace studio::text
