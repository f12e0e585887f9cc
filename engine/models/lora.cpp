#include "models/lora.h"

#include <cmath>
#include <optional>
#include <set>

#include <ATen/ops/cat.h>
#include <ATen/ops/isfinite.h>
#include <nlohmann/json.hpp>

#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/single_file.h"

namespace studio::models {

namespace {

// One module of a LoRA file: its down (A) and up (B) matrices and its alpha, if the file gives one.
struct Module {
  at::Tensor down, up;
  std::optional<double> alpha;
};

// PEFT's LoraConfig as diffusers writes it in the file's metadata ("transformer.lora_alpha", ...).
struct PeftConfig {
  std::optional<double> lora_alpha;
  nlohmann::json alpha_pattern = nlohmann::json::object();
  bool use_rslora = false;
};

PeftConfig peft_config(const io::SafetensorsFile& file) {
  PeftConfig c;
  const auto it = file.metadata().find("lora_adapter_metadata");
  if (it == file.metadata().end()) return c;
  const auto j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw InputError("--lora " + file.path() + ": its lora_adapter_metadata is not a JSON object");
  const auto field = [&](const char* key) {
    const auto f = j.find(std::string("transformer.") + key);
    return f == j.end() ? j.find(key) : f;
  };
  if (const auto f = field("lora_alpha"); f != j.end() && f->is_number()) c.lora_alpha = f->get<double>();
  if (const auto f = field("alpha_pattern"); f != j.end() && f->is_object()) c.alpha_pattern = *f;
  if (const auto f = field("use_rslora"); f != j.end() && f->is_boolean()) c.use_rslora = f->get<bool>();
  return c;
}

// The file's modules by their name in it (without the A/B/alpha suffix).
std::map<std::string, Module> read_modules(const std::shared_ptr<const io::SafetensorsFile>& file) {
  const std::pair<const char*, int> suffixes[] = {{".lora_A.weight", 0},    {".lora_down.weight", 0},
                                                  {".lora_B.weight", 1},    {".lora_up.weight", 1},
                                                  {".alpha", 2}};
  std::map<std::string, Module> modules;
  for (const auto& info : file->tensors()) {
    int part = -1;
    std::string stem;
    for (const auto& [suffix, which] : suffixes)
      if (plan::ends_with(info.name, suffix)) stem = info.name.substr(0, info.name.size() - std::string(suffix).size()), part = which;
    if (part < 0)
      throw InputError("--lora " + file->path() + ": tensor " + info.name + " is not a LoRA weight (lora_A / lora_B, "
                       "lora_down / lora_up or alpha); diff weights and DoRA are not read yet");
    const auto t = io::to_tensor(file, info, at::kFloat, at::kCPU).clone();
    if (!at::isfinite(t).all().item<bool>())
      throw InputError("--lora " + file->path() + ": tensor " + info.name + " holds values that are not finite "
                       "(NaN or infinity); the file is damaged");
    auto& m = modules[stem];
    if (part == 2) {
      if (t.numel() != 1) throw InputError("--lora " + file->path() + ": " + info.name + " is not one number");
      m.alpha = t.item<double>();
    } else {
      if (t.dim() != 2) throw InputError("--lora " + file->path() + ": " + info.name + " is not a matrix");
      (part == 0 ? m.down : m.up) = t;
    }
  }
  for (const auto& [stem, m] : modules) {
    if (!m.down.defined() || !m.up.defined())
      throw InputError("--lora " + file->path() + ": module " + stem + " has " + (m.down.defined() ? "A" : "B") +
                       " (lora_" + (m.down.defined() ? "down" : "up") + ") but not the other half");
    if (m.up.size(1) != m.down.size(0))
      throw InputError("--lora " + file->path() + ": module " + stem + " has rank " + std::to_string(m.down.size(0)) +
                       " in lora_A/lora_down and " + std::to_string(m.up.size(1)) + " in lora_B/lora_up");
    if (m.down.size(0) > std::min(m.down.size(1), m.up.size(0)))
      throw InputError("--lora " + file->path() + ": module " + stem + " has rank " + std::to_string(m.down.size(0)) +
                       ", more than its layer's sizes; the file is not a LoRA of a linear layer");
  }
  return modules;
}

// Where the family's original modules go: "double_blocks.0.img_attn.qkv" -> its rows in each diffusers weight.
struct Target {
  std::string weight;  // the engine's weight name
  std::vector<plan::RowSlice> rows;  // the module's output rows that make it, in order
};
struct OriginalLayout {
  std::map<std::string, std::vector<Target>> modules;  // by original module name
  std::map<std::string, std::string> underscored;      // "double_blocks_0_img_attn_qkv" -> the dotted name
};

OriginalLayout original_layout(const plan::ModelFolder& folder) {
  OriginalLayout out;
  for (const auto& [weight, slices] : plan::rules_of(folder).original_layout(folder)) {
    if (!plan::ends_with(weight, ".weight") || slices.empty() || !plan::ends_with(slices.front().tensor, ".weight")) continue;
    const std::string module = slices.front().tensor.substr(0, slices.front().tensor.size() - 7);
    out.modules[module].push_back({weight, slices});
    std::string u = module;
    for (auto& c : u) c = c == '.' ? '_' : c;
    out.underscored[u] = module;
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<io::LowRankDelta>> lora_deltas(const plan::ModelFolder& folder,
                                                                 const std::vector<plan::LoraUse>& loras,
                                                                 const std::vector<std::string>& weight_names) {
  const std::set<std::string> weights(weight_names.begin(), weight_names.end());
  const auto layout = original_layout(folder);
  const std::string family = plan::rules_of(folder).name();
  std::map<std::string, std::vector<io::LowRankDelta>> out;
  for (const auto& use : loras) {
    const auto file = io::SafetensorsFile::open(use.file);
    const auto peft = peft_config(*file);
    for (const auto& [stem, m] : read_modules(file)) {
      const double rank = double(m.down.size(0));
      // Its alpha: the module's own, PEFT's pattern or lora_alpha, else the rank (a scale of 1).
      std::string module = stem.rfind("transformer.", 0) == 0 ? stem.substr(12) : plan::without_checkpoint_prefix(stem);
      double alpha = m.alpha.value_or(peft.lora_alpha.value_or(rank));
      for (const auto& [pattern, value] : peft.alpha_pattern.items())
        if (value.is_number() && (module == pattern || plan::ends_with(module, "." + pattern))) alpha = value.get<double>();
      const double scale = use.scale * alpha / (peft.use_rslora ? std::sqrt(rank) : rank);
      const std::string source = use.file + ", " + stem;
      if (weights.count(module + ".weight")) {  // the engine's own name
        out[module + ".weight"].push_back({m.up, m.down, scale, source});
        continue;
      }
      if (stem.rfind("lora_unet_", 0) == 0) {  // kohya's: the original name with dots as underscores
        const auto it = layout.underscored.find(stem.substr(10));
        module = it == layout.underscored.end() ? "" : it->second;
      }
      if (stem.rfind("lora_te", 0) == 0 || stem.rfind("text_encoder", 0) == 0)
        throw InputError("--lora " + use.file + ": module " + stem + " is the text encoder's; LoRAs are applied to the "
                         "transformer only so far (the reference would change the text encoder too)");
      const auto targets = layout.modules.find(module);
      if (targets == layout.modules.end())
        throw InputError("--lora " + use.file + ": module " + stem + " is not a layer of this " + family +
                         " transformer (in diffusers' names or its original checkpoint's); is the LoRA for another model?");
      for (const auto& t : targets->second) {
        if (!weights.count(t.weight))
          throw InputError("--lora " + use.file + ": module " + stem + " changes " + t.weight + ", which this " + family +
                           " transformer does not have; is the LoRA for another variant?");
        std::vector<at::Tensor> rows;
        for (const auto& s : t.rows) {
          if (s.rows >= 0 && s.first + s.rows > m.up.size(0))
            throw InputError("--lora " + use.file + ": module " + stem + " has " + std::to_string(m.up.size(0)) +
                             " output rows; " + t.weight + " needs rows up to " + std::to_string(s.first + s.rows) +
                             ": this LoRA was made for another model's sizes");
          rows.push_back(s.rows < 0 ? m.up : m.up.narrow(0, s.first, s.rows));
        }
        out[t.weight].push_back({rows.size() == 1 ? rows[0] : at::cat(rows, 0), m.down, scale, source});
      }
    }
  }
  return out;
}

}  // namespace studio::models
