#include "io/weights/lora.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <regex>
#include <set>

#include <ATen/ops/cat.h>
#include <ATen/ops/isfinite.h>
#include <nlohmann/json.hpp>

#include "io/safetensors/lora_files.h"

#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/single_file.h"

namespace studio::io {

namespace {

// The tensors of one module of a LoRA file: its down (A) and up (B) matrices, its alpha if the file gives one,
// PEFT's bias of B, and whole differences of the layer's weight and bias.
struct Module {
  at::Tensor down, up, up_bias, diff, diff_b;
  std::optional<double> alpha;
};

// Which part of the model a module of the file changes, and its name there.
struct Route {
  LoraTarget target = LoraTarget::Transformer;
  std::string module;        // without the file's prefix
  bool underscored = false;  // kohya's: dots written as underscores
  bool original = false;     // the original checkpoint's names, where they may collide with diffusers' (Wan's norms)
};

Route route_of(const std::string& stem) {
  static const struct {
    const char* prefix;
    LoraTarget target;
    bool underscored;
  } prefixes[] = {{"transformer.", LoraTarget::Transformer, false},
                  {"lora_unet_", LoraTarget::Transformer, true},
                  {"text_encoders.clip_l.transformer.", LoraTarget::ClipText, false},
                  {"text_encoders.t5xxl.transformer.", LoraTarget::T5Text, false},
                  {"text_encoder_2.", LoraTarget::T5Text, false},
                  {"text_encoder.", LoraTarget::ClipText, false},
                  {"lora_te1_", LoraTarget::ClipText, true},
                  {"lora_te_", LoraTarget::ClipText, true},
                  {"lora_te2_", LoraTarget::T5Text, true},
                  {"lora_te3_", LoraTarget::T5Text, true}};
  for (const auto& p : prefixes)
    if (stem.rfind(p.prefix, 0) == 0)
      return {p.target, stem.substr(std::strlen(p.prefix)), p.underscored, p.underscored && p.target == LoraTarget::Transformer};
  const std::string module = plan::without_checkpoint_prefix(stem);
  return {LoraTarget::Transformer, module, false, module != stem};
}

const char* target_name(LoraTarget t) {
  return t == LoraTarget::Transformer ? "transformer" : t == LoraTarget::ClipText ? "CLIP text encoder" : "T5 text encoder";
}

// Why the run leaves a tensor of a LoRA file out, as diffusers 0.35.2 does; empty when it applies.
std::string left_out_why(const plan::Family& family, const std::string& tensor) {
  const auto [stem, piece] = lora_piece(tensor);
  if (piece == LoraPiece::DoraScale) return "DoRA magnitudes, which diffusers drops, applying the rest as a LoRA";
  const Route r = route_of(stem);
  if (r.target != LoraTarget::Transformer && !family.takes_text_encoder_loras())
    return std::string("text-encoder modules: diffusers applies LoRAs to the ") + family.name() + " transformer only";
  if (r.target == LoraTarget::ClipText &&
      (r.module.find("position_embedding") != std::string::npos || r.module.find("text_projection") != std::string::npos))
    return "CLIP's position embedding and text projection, which diffusers leaves out";
  return "";
}

// One entry of PEFT's alpha_pattern: a regular expression a module's whole name ends in, after a dot or alone.
struct AlphaPattern {
  std::string key;
  std::regex re;
  double alpha = 0;
};

// PEFT's LoraConfig as diffusers writes it in the file's metadata ("transformer.lora_alpha", ...).
struct PeftConfig {
  std::optional<double> lora_alpha;
  std::vector<AlphaPattern> alpha_pattern;  // in the file's order: PEFT takes the first that matches
  bool use_rslora = false;

  // A module's alpha from the pattern, as PEFT's get_pattern_key matches: re.match("(.*\.)?(KEY)$", module).
  std::optional<double> pattern_alpha(const std::string& module, const std::string& given) const {
    for (const auto& p : alpha_pattern) {
      try {
        if (std::regex_match(module, p.re)) return p.alpha;
      } catch (const std::regex_error&) {  // a pattern too complex for this module's name
        throw InputError(given + ": alpha_pattern key \"" + p.key + "\" in its lora_adapter_metadata could not be "
                         "matched against module " + module + " (too complex a regular expression)");
      }
    }
    return std::nullopt;
  }
};

PeftConfig peft_config(const SafetensorsFile& file, const std::string& given) {
  PeftConfig c;
  const auto it = file.metadata().find("lora_adapter_metadata");
  if (it == file.metadata().end()) return c;
  const auto j = nlohmann::ordered_json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw InputError(given + ": its lora_adapter_metadata is not a JSON object");
  const auto field = [&](const char* key) {
    const auto f = j.find(std::string("transformer.") + key);
    return f == j.end() ? j.find(key) : f;
  };
  if (const auto f = field("lora_alpha"); f != j.end() && !f->is_null()) {
    if (!f->is_number())  // PEFT's LoraConfig takes a number; a string once read as no alpha at all
      throw InputError(given + ": lora_alpha in its lora_adapter_metadata is " + f->dump() + ", not a number");
    c.lora_alpha = f->get<double>();
  }
  if (const auto f = field("alpha_pattern"); f != j.end() && f->is_object()) {
    for (const auto& [key, value] : f->items()) {
      if (!value.is_number())
        throw InputError(given + ": alpha_pattern[\"" + key + "\"] in its lora_adapter_metadata is " + value.dump() +
                         ", not a number");
      try {
        c.alpha_pattern.push_back({key, std::regex("(.*\\.)?(" + key + ")"), value.get<double>()});
      } catch (const std::regex_error&) {
        throw InputError(given + ": alpha_pattern key \"" + key + "\" in its lora_adapter_metadata is not a regular "
                         "expression the engine reads (ECMAScript's syntax, which PEFT's keys use but for Python-only "
                         "forms such as (?P<name>...)); each key is matched against the modules' names");
      }
    }
  }
  if (const auto f = field("use_rslora"); f != j.end() && f->is_boolean()) c.use_rslora = f->get<bool>();
  return c;
}

// The file's modules that `wanted` keeps, by their name in it (without the A/B/alpha/diff suffix).
std::map<std::string, Module> read_modules(const std::shared_ptr<const SafetensorsFile>& file,
                                           const std::function<bool(const std::string&)>& wanted,
                                           const std::string& given) {
  std::map<std::string, Module> modules;
  for (const auto& info : file->tensors()) {
    const auto [stem, piece] = lora_piece(info.name);
    if (piece == LoraPiece::Unknown)
      throw InputError(given + ": tensor " + info.name + " is not a LoRA weight (lora_A / lora_B, "
                       "lora_down / lora_up, alpha, or a whole difference: diff, diff_b)");
    if (!wanted(info.name)) continue;
    if (piece != LoraPiece::Alpha && !weight_format(info.dtype))  // an integer matrix is no adapter's
      throw InputError(given + ": tensor " + info.name + " is " + dtype_name(info.dtype) + "; a LoRA's matrices "
                       "are floating point (F32, F16, BF16)");
    const auto t = to_tensor(file, info, at::kFloat, at::kCPU).clone();
    if (!at::isfinite(t).all().item<bool>())
      throw InputError(given + ": tensor " + info.name + " holds values that are not finite "
                       "(NaN or infinity); the file is damaged");
    auto& m = modules[stem];
    if (piece == LoraPiece::Alpha) {
      if (t.numel() != 1) throw InputError(given + ": " + info.name + " is not one number");
      m.alpha = t.item<double>();
    } else if (piece == LoraPiece::Down || piece == LoraPiece::Up) {
      if (t.dim() != 2) throw InputError(given + ": " + info.name + " is not a matrix");
      (piece == LoraPiece::Down ? m.down : m.up) = t;
    } else {
      (piece == LoraPiece::UpBias ? m.up_bias : piece == LoraPiece::Diff ? m.diff : m.diff_b) = t;
    }
  }
  for (const auto& [stem, m] : modules) {
    if (m.down.defined() != m.up.defined())
      throw InputError(given + ": module " + stem + " has " + (m.down.defined() ? "A" : "B") +
                       " (lora_" + (m.down.defined() ? "down" : "up") + ") but not the other half");
    if (!m.down.defined() && !m.diff.defined() && !m.diff_b.defined())
      throw InputError(given + ": module " + stem + " has " + (m.up_bias.defined() ? "a bias of B" : "an alpha") +
                       " but no lora_A / lora_B matrices");
    if (!m.down.defined()) continue;
    if (m.up.size(1) != m.down.size(0))
      throw InputError(given + ": module " + stem + " has rank " + std::to_string(m.down.size(0)) +
                       " in lora_A/lora_down and " + std::to_string(m.up.size(1)) + " in lora_B/lora_up");
    if (m.down.size(0) > std::min(m.down.size(1), m.up.size(0)))
      throw InputError(given + ": module " + stem + " has rank " + std::to_string(m.down.size(0)) +
                       ", more than its layer's sizes; the file is not a LoRA of a linear layer");
  }
  return modules;
}

// Where one of a file's modules goes: an engine weight, and the module's output rows that make it, in order.
struct Target {
  std::string weight;
  std::vector<plan::RowSlice> rows;  // one slice of rows -1: all of them
};
// What a module changes: its layer's weight (A/B, .diff) and bias (.diff_b, PEFT's bias of B).
struct Targets {
  std::vector<Target> weight, bias;
};

std::string underscored(std::string name) {
  for (auto& c : name) c = c == '.' ? '_' : c;
  return name;
}

// A tensor's module: "x.weight" and "x.bias" -> "x"; a norm's "x.scale" stays whole (its .diff names it so).
std::string module_of(const std::string& tensor) {
  for (const char* suffix : {".weight", ".bias"})
    if (plan::ends_with(tensor, suffix)) return tensor.substr(0, tensor.size() - std::strlen(suffix));
  return tensor;
}

// Names a target part answers to: its weights by the engine's names, and, for the transformer, the family's
// original checkpoint layout (a fused original tensor feeding several engine weights by rows).
struct Names {
  std::set<std::string> weights;
  std::map<std::string, std::vector<Target>> original;  // by original tensor
  std::map<std::string, std::string> underscored;       // "double_blocks_0_img_attn_qkv" -> the dotted module

  Names(const plan::ModelFolder& folder, const std::vector<std::string>& weight_names, LoraTarget target)
      : weights(weight_names.begin(), weight_names.end()) {
    if (target != LoraTarget::Transformer) {
      for (const auto& w : weights) underscored[io::underscored(module_of(w))] = module_of(w);
      return;
    }
    for (const auto& [weight, slices] : plan::rules_of(folder).original_layout(folder)) {
      if (slices.empty() || std::any_of(slices.begin(), slices.end(),
                                        [&](const plan::RowSlice& s) { return s.tensor != slices.front().tensor; }))
        continue;
      original[slices.front().tensor].push_back({weight, slices});
      underscored[io::underscored(module_of(slices.front().tensor))] = module_of(slices.front().tensor);
    }
  }

  Targets of(const Route& r) const {
    std::string module = r.module;
    if (r.underscored) {
      const auto it = underscored.find(module);
      if (it == underscored.end()) return {};
      module = it->second;
    }
    // A name in the original layout is looked up there alone (Wan's original norm3 is diffusers' norm2).
    if (r.original && !original.empty()) return in_original(module);
    Targets t;
    if (weights.count(module + ".weight")) t.weight.push_back({module + ".weight", {{}}});
    if (weights.count(module + ".bias")) t.bias.push_back({module + ".bias", {{}}});
    if (!t.weight.empty() || !t.bias.empty() || r.target != LoraTarget::Transformer) return t;
    return in_original(module);
  }

  Targets in_original(const std::string& module) const {
    const auto found = [&](const std::string& name) {
      const auto it = original.find(name);
      return it == original.end() ? std::vector<Target>{} : it->second;
    };
    Targets t{found(module + ".weight"), found(module + ".bias")};
    if (t.weight.empty()) t.weight = found(module);
    return t;
  }
};

// `t`'s rows for a target: the module's output rows that make the target's weight, in order.
at::Tensor rows_for(const at::Tensor& t, const Target& target, const std::string& where) {
  std::vector<at::Tensor> rows;
  for (const auto& s : target.rows) {
    if (s.rows >= 0 && s.first + s.rows > t.size(0))
      throw InputError(where + " has " + std::to_string(t.size(0)) + " output rows; " + target.weight +
                       " needs rows up to " + std::to_string(s.first + s.rows) +
                       ": this LoRA was made for another model's sizes");
    rows.push_back(s.rows < 0 ? t : t.narrow(0, s.first, s.rows));
  }
  return rows.size() == 1 ? rows[0] : at::cat(rows, 0);
}

}  // namespace

std::map<std::string, std::vector<WeightDelta>> lora_deltas(const plan::ModelFolder& folder,
                                                                const std::vector<plan::LoraUse>& loras,
                                                                const std::vector<std::string>& weight_names,
                                                                LoraTarget target) {
  const Names names(folder, weight_names, target);
  const plan::Family& family = plan::rules_of(folder);
  const std::string part = std::string("this ") + family.name() + " " + target_name(target);
  std::map<std::string, std::vector<WeightDelta>> out;
  for (const auto& use : loras) {
    const auto file = SafetensorsFile::open(use.file);
    const std::string given = use.flag + " " + use.file;  // as the user gave it: "--lora_2 style.safetensors"
    const auto peft = peft_config(*file, given);
    const auto wanted = [&](const std::string& tensor) {
      return left_out_why(family, tensor).empty() && route_of(lora_piece(tensor).first).target == target;
    };
    std::map<std::string, std::string> changed_by;  // weight -> the module of this file that changes it
    for (const auto& [stem, m] : read_modules(file, wanted, given)) {
      const Route route = route_of(stem);
      const std::string where = given + ": module " + stem;
      // Its alpha: PEFT's alpha_pattern, the module's own, lora_alpha, else the rank (a scale of 1).
      double low_rank_scale = 0;
      if (m.down.defined()) {
        const double rank = double(m.down.size(0));
        const double alpha =
            peft.pattern_alpha(route.module, given).value_or(m.alpha.value_or(peft.lora_alpha.value_or(rank)));
        low_rank_scale = alpha / (peft.use_rslora ? std::sqrt(rank) : rank);
      }
      const Targets t = names.of(route);
      if (t.weight.empty() && t.bias.empty())
        throw InputError(where + " is not a layer of " + part +
                         " (in diffusers' names or its original checkpoint's); is the LoRA for another model?");
      if ((m.down.defined() || m.diff.defined()) && t.weight.empty())
        throw InputError(where + " changes a weight; " + part + " has a bias there alone");
      if ((m.diff_b.defined() || m.up_bias.defined()) && t.bias.empty())
        throw InputError(where + " changes a bias (diff_b or lora_B.bias); its layer in " + part +
                         " has none");
      const std::string source = given + ", " + stem;
      // Beside the layers the strength is read at each call; merged it is part of the scale.
      const bool live = folder.loras_beside && use.live && target == LoraTarget::Transformer;
      const double strength = live ? 1.0 : use.scale;
      const auto delta = [&](at::Tensor up, at::Tensor down, double scale, const std::string& what) {
        return WeightDelta{std::move(up), std::move(down), scale * strength, what, live ? use.live : nullptr};
      };
      for (const auto& w : t.weight) {
        if (!names.weights.count(w.weight))
          throw InputError(where + " changes " + w.weight + ", which " + part +
                           " does not have; is the LoRA for another variant?");
        if (const auto [other, first] = changed_by.emplace(w.weight, stem); !first)
          throw InputError(where + " and module " + other->second + " both change " + w.weight +
                           ": the file holds that layer twice, under two names; it would be applied twice");
        if (m.down.defined()) out[w.weight].push_back(delta(rows_for(m.up, w, where), m.down, low_rank_scale, source));
        if (m.diff.defined()) out[w.weight].push_back(delta(rows_for(m.diff, w, where), {}, 1.0, source + ".diff"));
      }
      for (const auto& b : t.bias) {
        if (m.up_bias.defined())
          out[b.weight].push_back(delta(rows_for(m.up_bias, b, where), {}, low_rank_scale, source));
        if (m.diff_b.defined())
          out[b.weight].push_back(delta(rows_for(m.diff_b, b, where), {}, 1.0, source + ".diff_b"));
      }
    }
  }
  return out;
}

std::vector<std::string> lora_left_out(const plan::ModelFolder& folder, const std::vector<plan::LoraUse>& loras) {
  const plan::Family& family = plan::rules_of(folder);
  std::vector<std::string> lines;
  for (const auto& use : loras) {
    std::map<std::string, std::vector<std::string>> by_why;
    const auto file = SafetensorsFile::open(use.file);
    for (const auto& info : file->tensors())
      if (auto why = left_out_why(family, info.name); !why.empty()) by_why[why].push_back(info.name);
    for (const auto& [why, tensors] : by_why) {
      std::string named;
      for (size_t i = 0; i < tensors.size() && i < 3; ++i) named += (i ? ", " : "") + tensors[i];
      if (tensors.size() > 3) named += " and " + std::to_string(tensors.size() - 3) + " more";
      lines.push_back(use.flag + " " + use.file + ": " + std::to_string(tensors.size()) + " tensors left out, " + why +
                      " (" + named + ")");
    }
  }
  return lines;
}

bool lora_changes_text_encoders(const plan::ModelFolder& folder, const std::string& file) {
  const plan::Family& family = plan::rules_of(folder);
  const auto f = SafetensorsFile::open(file);  // held: tensors() lives in it
  for (const auto& info : f->tensors())
    if (left_out_why(family, info.name).empty() &&
        route_of(lora_piece(info.name).first).target != LoraTarget::Transformer)
      return true;
  return false;
}

}  // namespace studio::io
