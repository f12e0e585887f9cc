#include "plan/weight_choice.h"

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "plan/device_memory.h"
#include "plan/family.h"
#include "plan/lora_choice.h"

namespace studio::plan {

namespace {

bool starts_gguf(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char head[4] = {};
  return in.read(head, sizeof head) && std::memcmp(head, "GGUF", 4) == 0;
}

// "" when `file` can be a part's weights, else why not.
std::string single_file_problem(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return "is a folder, not a file (a model folder goes with --model)";
  if (!std::filesystem::exists(file, ec)) return "no such file";
  std::ifstream in(file, std::ios::binary);
  char head[8] = {};
  if (!in) return std::string("cannot be read (") + std::strerror(errno) + "); check that it is readable by you";
  if (!in.read(head, sizeof head)) return "is shorter than any weights file (" + std::to_string(in.gcount()) + " bytes)";
  if (starts_gguf(file)) return "";
  const bool safetensors = file.size() > 12 && file.compare(file.size() - 12, 12, ".safetensors") == 0;
  if (safetensors) return "";
  return "is neither a GGUF file (it does not start with 'GGUF') nor a .safetensors file";
}

}  // namespace

void check_weight_choices(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out) {
  const std::pair<const char*, const std::string*> files[] = {{"transformer", &job.transformer_file},
                                                               {"transformer_2", &job.transformer_2_file},
                                                               {"text_encoder", &job.text_encoder_file},
                                                               {"text_encoder_2", &job.text_encoder_2_file}};
  for (const auto& [flag, file] : files) {
    if (file->empty()) continue;
    if (const auto why = single_file_problem(*file); !why.empty())
      out.push_back({flag, "--" + std::string(flag) + " " + *file + ": " + why +
                               "; give a GGUF or safetensors file of the folder's " + flag + "/"});
  }
  if (!job.transformer_2_file.empty() && rules_of(model).second_expert_boundary(model) <= 0)
    out.push_back({"transformer_2", "--transformer_2: the second expert's file (Wan2.2); " + model.dir +
                                        " has one transformer, so give --transformer alone"});
  for (const auto& [flag, file] : {std::pair{"text_encoder", &job.text_encoder_file},
                                   std::pair{"text_encoder_2", &job.text_encoder_2_file}})
    if (!file->empty() && !std::filesystem::is_directory(std::filesystem::path(model.dir) / flag))
      out.push_back({flag, "--" + std::string(flag) + ": " + model.dir + " has no " + flag +
                               "/ (its config.json says what the file holds); this family's text encoders are in " +
                               (rules_of(model).t5_part() == "text_encoder" ? "text_encoder/" : "text_encoder/ and text_encoder_2/")});
  if (!job.offload.empty() && job.offload != "blocks")
    out.push_back({"offload", "--offload " + job.offload + ": blocks is what is offered (the transformer's blocks in "
                              "host memory, two at a time on the device). What diffusers' model offload does is how "
                              "every run goes already: the text encoders, the transformer and the VAE are each "
                              "loaded only while they run, one part at a time"});
  if (job.text_encoder_device != "auto" && job.text_encoder_device != "cpu")
    out.push_back({"text_encoder_device", "--text_encoder_device " + job.text_encoder_device +
                                              ": auto (the run's device) or cpu"});
  // A GGUF file is quantized already: fp8 on top would change only the layers it keeps in float, and its results.
  for (const auto& [flag, file] : {std::pair{"transformer", &job.transformer_file},
                                   std::pair{"transformer_2", &job.transformer_2_file}})
    if (job.quantize == "fp8" && !file->empty() && starts_gguf(*file))
      out.push_back({"quantize", "--quantize fp8 with --" + std::string(flag) + " " + *file + ": the GGUF file is "
                                 "quantized already, and fp8 would store the layers it keeps in float as well; drop "
                                 "--quantize fp8, or give a bfloat16 file or folder to store in fp8"});
  if (!job.quantize.empty() && job.quantize != "fp8")
    out.push_back({"quantize", "--quantize " + job.quantize + ": the format to keep float weights in; fp8 is the one "
                                   "offered (for GGUF quantizations, give a quantized file with --transformer)"});
}

double weight_bytes_per_param(const JobSpec& job, double params, int bytes_per_value) {
  std::error_code ec;
  // A file of 2 bytes a weight or more holds float types, which load as the run's dtype.
  if (!job.transformer_file.empty() && params > 0)
    if (const auto size = std::filesystem::file_size(job.transformer_file, ec); !ec && double(size) / params < 1.9)
      return double(size) / params;
  return job.quantize == "fp8" || job.fp8_gemm ? 1.0 : double(bytes_per_value);
}

double t5_weight_bytes(const JobSpec& job, const ModelFolder& model, int bytes_per_value) {
  const auto& t5 = *model.text_encoder;
  const std::string& file = model.t5_part() == "text_encoder_2" ? job.text_encoder_2_file : job.text_encoder_file;
  std::error_code ec;
  if (!file.empty())
    if (const auto size = std::filesystem::file_size(file, ec); !ec)
      return double(size) + double(t5.vocab_size) * t5.d_model * bytes_per_value;
  return t5.parameters() * bytes_per_value;
}

std::vector<StorageChoice> storage_choices(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                                           int b, double memory_gib) {
  std::vector<StorageChoice> out;
  const auto add = [&](const std::string& flag, const ParallelConfig& q, const JobSpec& j) {
    const double peak = device_peak_gib(estimate_memory(q, j, model, b), j, memory_gib);
    out.push_back({flag, q, j, peak, memory_gib <= 0 || peak <= memory_gib});
  };
  // Offered only where the configuration itself is allowed: no more problems than the one as given has (sharding
  // is refused with a cache per guidance branch across CFG ranks; PipeFusion with some caches and families).
  const size_t problems = validate_parallel(p, job, model, p.world_size()).size();
  const auto allowed = [&](const ParallelConfig& q) {
    return validate_parallel(q, job, model, q.world_size()).size() <= problems;
  };
  add("", p, job);
  const bool quantizable = job.quantize.empty() && job.transformer_file.empty() && job.transformer_2_file.empty();
  JobSpec quantized = job;
  quantized.quantize = "fp8";
  if (quantizable) add("--quantize fp8", p, quantized);
  // The other ways: the blocks in host memory, spread over the ranks that run them alike (both exact), or divided
  // among PipeFusion stages (the same ranks, each holding its stage's blocks instead of the sequence's share; its
  // pipelined steps read activations a step old, so close to one process's result, not equal).
  std::vector<StorageChoice> ways;
  if (job.offload.empty() && !p.shard_weights && offload_saves_memory(job)) {
    JobSpec j = job;
    j.offload = "blocks";
    ways.push_back({"--offload blocks", p, j});
  }
  if (!p.shard_weights && p.replica_degree() > 1 && job.offload.empty()) {
    ParallelConfig q = p;
    q.shard_weights = true;
    if (allowed(q)) ways.push_back({"--shard_weights", q, job});
  }
  if (p.pipefusion_parallel_degree == 1 && p.sp_degree() > 1) {
    ParallelConfig q = p;
    q.pipefusion_parallel_degree = p.sp_degree();
    q.ulysses_degree = q.ring_degree = 1;
    if (allowed(q))
      ways.push_back({"--pipefusion_parallel_degree " + std::to_string(q.pipefusion_parallel_degree), q, job});
  }
  for (const auto& e : ways) add(e.flag, e.config, e.job);
  // Two at once, where no one way fits alone: fp8 weights with each of the others.
  if (quantizable && std::none_of(out.begin() + 1, out.end(), [](const StorageChoice& c) { return c.fits; }))
    for (const auto& e : ways) {
      JobSpec j = e.job;
      j.quantize = "fp8";
      add("--quantize fp8 " + e.flag, e.config, j);
    }
  return out;
}

void use_job_weights(ModelFolder& model, const JobSpec& job) {
  if (!job.transformer_file.empty()) model.weight_files["transformer"] = job.transformer_file;
  if (!job.transformer_2_file.empty()) model.weight_files["transformer_2"] = job.transformer_2_file;
  if (!job.text_encoder_file.empty()) model.weight_files["text_encoder"] = job.text_encoder_file;
  if (!job.text_encoder_2_file.empty()) model.weight_files["text_encoder_2"] = job.text_encoder_2_file;
  model.quantize = job.quantize == "fp8" ? std::optional(WeightFormat::F8_E4M3) : std::nullopt;
  model.fp8_gemm = job.fp8_gemm;
  model.loras = parse_loras(job.lora);
  model.loras_2 = parse_loras(job.lora_2, "--lora_2");
}

}  // namespace studio::plan
