#include "pipeline/run_job.h"

#include <chrono>
#include <filesystem>
#include <optional>


#include "compat/attention_kernels.h"
#include "compat/fp8_gemm.h"
#include "compat/heap.h"
#include "compat/torch_compat.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/lora.h"
#include "io/weights/tensor_file.h"
#include "cache/step_cache.h"
#include "models/family_runtime.h"
#include "models/offloaded_blocks.h"
#include "parallel/job_ranks.h"
#include "parallel/parallel_model.h"
#include "parallel/parallel_vae.h"
#include "parallel/sharded_blocks.h"
#include "pipeline/device_choice.h"
#include "pipeline/embeddings.h"
#include "pipeline/making_room.h"
#include "pipeline/outputs.h"
#include "pipeline/reproduction.h"
#include "plan/human_bytes.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/mag_ratios.h"
#include "plan/parallel.h"
#include "plan/weight_choice.h"

namespace studio::pipeline {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// "First-Block Cache: 8 of 12 calls reused the blocks (full calls: 1 5 10)"; with two calls a step,
// "First-Block Cache: 14 of 24 calls reused the blocks (full calls per step, of 2: 2 2 0 0 0 2 0 0 0 2 0 2)".
std::string cache_summary(const std::string& name, const std::vector<int>& full, int calls_per_step) {
  std::string steps;
  size_t skipped = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    if (calls_per_step > 1) steps += " " + std::to_string(full[i]);
    else if (full[i]) steps += " " + std::to_string(i + 1);
    skipped += size_t(calls_per_step - full[i]);
  }
  return name + ": " + std::to_string(skipped) + " of " + std::to_string(full.size() * size_t(calls_per_step)) +
         " calls reused the blocks (" +
         (calls_per_step > 1 ? "full calls per step, of " + std::to_string(calls_per_step) + ":" : "full calls:") +
         steps + ")";
}

// MagCache's ratios measured by this run (every call's change but the first's), to the file asked for.
void write_calibration(const plan::JobSpec& job, const plan::ModelFolder& model, const cache::StepCache& cache,
                       const std::function<void(const std::string&)>& log) {
  const auto& changes = cache.changes();
  const auto& rules = plan::rules_of(model);
  plan::MagRatios r{model.dir,
                    model.variant.id,
                    rules.blocks(model),
                    rules.hidden_size(model),
                    int(changes.size()),
                    std::vector<double>(changes.begin() + 1, changes.end())};
  plan::write_mag_ratios(job.magcache_calibrate, r);
  log("MagCache: wrote the ratios of " + plan::counted(r.steps, "step", "steps") + " to " + job.magcache_calibrate);
}

// The caller's hooks, with the stop check agreed by every rank, the last step's latents remembered, and
// how many of the step's calls ran every block with a step cache (one call a step, or one per guidance
// branch: ParallelTransformer::calls_per_step) of the model the step ran (`model`: the one in use, which
// Wan2.2's expert switch replaces).
// The attention kernels chosen during a step are logged after it (the first, or a new shape's).
Hooks step_hooks(const Hooks& hooks, parallel::Mesh& mesh, const at::Device& device, PartialLatents& partial,
                 const std::shared_ptr<parallel::ParallelTransformer>& model,
                 const std::function<void(const std::string&)>& log) {
  Hooks h = hooks;
  h.stop_requested = parallel::agreed_stop(mesh, hooks.stop_requested, device);
  h.on_step = [&hooks, &partial, &model, log](StepDone done) {
    for (const auto& line : compat::take_attention_choices()) log(line);
    partial = {done.latents, done.step, done.total};
    if (model && !model->full_calls_per_step().empty()) {
      done.full = model->full_calls_per_step().back();
      done.calls = model->calls_per_step();
    }
    if (hooks.on_step) hooks.on_step(done);
  };
  return h;
}

// Denoises this data-parallel group's samples; returns every group's final latents (float32, CPU).
at::Tensor denoise_stage(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                         const Hooks& hooks, at::ScalarType dtype, const at::Device& device, DenoiseInputs in,
                         sampling::NoiseSource* noise, JobResult& r, const std::function<void(const std::string&)>& log,
                         std::chrono::steady_clock::time_point t0, KeptTransformers* kept) {
  // A PipeFusion stage holds the weights of its own blocks only.
  models::BlockRange blocks;
  if (const int stages = mesh.config().pipefusion_parallel_degree; stages > 1) {
    const auto [first, end] = plan::stage_blocks(plan::rules_of(model).blocks(model), mesh.coords().pipefusion, stages);
    blocks = {size_t(first), size_t(end)};
  }
  // The blocks' weights sharded over the CFG x ring x Ulysses ranks, or in host memory, when the job asks.
  // They take each block as it loads: the rank never holds the whole transformer.
  const auto load = [&](int expert) {
    const auto from = [&](const plan::ModelFolder& folder) {
      std::shared_ptr<models::BlockWeights> held;
      const bool ahead = device.is_cuda();  // the transfers overlap the compute on a GPU (models/block_prefetch.h)
      if (mesh.config().shard_weights)
        held = std::make_shared<parallel::ShardedBlocks>(mesh.group(plan::Dim::Replica), ahead);
      else if (job.offload == "blocks")
        held = std::make_shared<models::OffloadedBlocks>(device, ahead);
      auto t = models::load_transformer(folder, dtype, device, blocks, expert, std::move(held));
      compat::give_back_free_heap();  // what the load's temporaries held
      return t;
    };
    if (!kept) return from(model);
    const std::string how = std::string(c10::toString(dtype)) + " on " + device.str() + ", blocks " +
                            std::to_string(blocks.first) + "-" + std::to_string(blocks.end) +
                            (mesh.config().shard_weights ? ", sharded" : "") + ", offload " + job.offload;
    return kept->take(model, expert, how, from, log);
  };
  std::shared_ptr<models::DitModel> transformer = load(0);
  r.seconds_loading = since(t0);
  const auto geo = plan::latent_geometry(job, model);
  log("denoising " + io::shape_str(geo.shape(job.num_videos_per_prompt)) + " latents (" +
      std::to_string(geo.latent_tokens) + (geo.has_frames ? " video + " : " image + ") +
      std::to_string(in.prompt_embeds.size(1)) + " text tokens), " +
      plan::counted(job.num_inference_steps, "step", "steps") + " of " + plan::rules_of(model).sampler_name(model) + ", " +
      mesh.config().describe());
  const auto t1 = std::chrono::steady_clock::now();
  ModelCall call;  // the model's own forward() in one process without a cache
  std::shared_ptr<parallel::ParallelTransformer> parallel_model;
  const auto wrap = [&] {
    if (auto caches = cache::make_step_caches(job, model); mesh.world_size() > 1 || !caches.empty()) {
      parallel_model = std::make_shared<parallel::ParallelTransformer>(*transformer, mesh, std::move(caches));
      call = [pm = parallel_model.get()](const models::StepInputs& step, const models::Positions& pos) {
        return (*pm)(step, pos);
      };
    }
  };
  const auto log_cache = [&] {
    if (const auto* cache = parallel_model ? parallel_model->cache() : nullptr) {
      if (job.magcache_calibrate.empty())
        log(cache_summary(cache->name(), parallel_model->full_calls_per_step(), parallel_model->calls_per_step()));
      else if (parallel::writes(mesh)) write_calibration(job, model, *cache, log);
    }
  };
  wrap();
  std::optional<SecondExpert> second;
  if (const double boundary = plan::rules_of(model).second_expert_boundary(model); boundary > 0)
    second = SecondExpert{boundary * plan::rules_of(model).train_steps(model), job.guidance_scale_2,
                          [&] {
                            log_cache();
                            call = {};
                            parallel_model.reset();
                            transformer.reset();  // the first expert's weights go before the second's load
                            const auto file = model.weight_files.find("transformer_2");
                            log("switching to the low-noise expert (" +
                                (file != model.weight_files.end()
                                     ? file->second
                                     : (std::filesystem::path(model.dir) / "transformer_2").string()) +
                                ")");
                            transformer = load(1);
                            wrap();
                            return StepModel{transformer.get(), call};
                          }};
  if (hooks.on_phase) hooks.on_phase("denoising");
  PartialLatents partial;
  at::Tensor latents;
  compat::HeapForRepeatedWork heap;  // every step allocates what the last one freed
  try {
    const auto sampler = models::make_sampler(model, job.num_inference_steps, geo.latent_tokens);
    latents = denoise(*transformer, *sampler, in, noise, step_hooks(hooks, mesh, device, partial, parallel_model, log),
                      call, second ? &*second : nullptr);
  } catch (const Cancelled&) {
    if (!job.keep_partial) throw;
    if (!parallel::writes(mesh)) throw cancelled_on_a_reader();
    const auto kept = keep_partial_latents(job, model, job_metadata(job, model, mesh.config()), partial);
    if (kept.empty()) throw;
    throw Cancelled(kept);
  }
  log_cache();
  auto all = parallel::gather_samples(mesh, latents).cpu();
  r.seconds_denoising = since(t1);
  return all;  // the transformer's weights are released here, before the VAE loads
}

}  // namespace

JobResult run_job(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh, const Hooks& hooks,
                  const std::function<void(const std::string&)>& log, KeptBetweenRuns* kept) {
  JobResult r;
  const auto t0 = std::chrono::steady_clock::now();
  const at::Device device = pick_device(job.device);
  const at::ScalarType dtype = pick_dtype(job.dtype, device);
  compat::allow_tf32(job.allow_tf32);
  compat::set_attention_kernel(job.attention_kernel);
  if (job.fp8_gemm && !compat::has_float8_types())
    throw InputError("--fp8_gemm: this build's LibTorch " + std::string(compat::torch_version()) +
                     " has no float8 types; run without --fp8_gemm, or use a build on LibTorch 2.x");
  if (job.fp8_gemm && device.is_cuda() && dtype != at::kBFloat16)
    throw InputError("--fp8_gemm on a GPU gives bfloat16 products; this run computes in " +
                     std::string(c10::toString(dtype)) + ": use --dtype bfloat16 (or auto) with --fp8_gemm");
  auto phase = [&](const char* name) {
    if (hooks.on_phase) hooks.on_phase(name);
  };

  // Each expert loaded dry, onto the meta device (nothing read, nothing kept), before anything is encoded: every
  // weight of the folder or the single file checked against the config by name and shape, the file's architecture
  // the folder's, its LoRAs read and fitted. A file that lacks a tensor, or a damaged --lora_2, would otherwise
  // stop the run only as it loads (Wan2.2's second expert: halfway). The text encoders' files are read as they
  // encode.
  plan::ModelFolder weights_from = model;
  plan::use_job_weights(weights_from, job);
  const int experts = plan::rules_of(model).second_expert_boundary(model) > 0 ? 2 : 1;
  for (int expert = 0; expert < experts; ++expert) models::load_transformer(weights_from, dtype, at::kMeta, {}, expert);

  // Encode: the pictures first (a file that does not decode stops the run before any other work), on every
  // rank, before any noise is drawn (CogVideoX's VAE draws first); then the words.
  const auto geo = plan::latent_geometry(job, model);
  const int64_t samples = job.num_videos_per_prompt;
  const auto slice = parallel::data_slice(mesh, samples);
  sampling::SeededNoise seeded(job.seed + uint64_t(slice.first), int(slice.count));
  if (!job.prompt.empty() || !job.image_file.empty()) phase("encoding");
  // What a part that runs out of memory beside a kept transformer calls: it lets the transformer go.
  const auto make_room = [kept] { return kept && kept->transformers.let_go(); };
  models::PictureConditioning pictures;
  if (!job.image_file.empty()) {
    // With the parallel VAE every rank encodes its share of the picture's rows.
    std::unique_ptr<models::RowExchange> exchange;
    std::optional<models::RowShare> share;
    if (parallel::Group* rows = parallel::decode_rows(mesh)) {
      exchange = parallel::row_exchange(*rows);
      share = models::RowShare{exchange.get(), rows->rank(), rows->size()};
    }
    const auto encode = [&] {
      return models::condition_on_pictures(weights_from, job, dtype, device, seeded, log, share ? &*share : nullptr);
    };
    if (share) {
      pictures = encode();  // the ranks encode in step: none may run it again alone
    } else {
      pictures = again_with_room(encode, seeded, make_room, "encoding the pictures", "they are encoded again", log);
    }
  }
  Embeddings embeds =
      prompt_embeddings(job, weights_from, mesh, dtype, device, log, kept ? &kept->embeddings : nullptr, make_room);
  NamedTensors record = std::move(embeds.record);  // what --save_tensors writes
  record.insert(record.end(), pictures.record.begin(), pictures.record.end());

  // Denoise this data-parallel group's samples.
  DenoiseInputs in;
  in.guidance_scale = job.guidance_scale;
  in.use_dynamic_cfg = job.use_dynamic_cfg;
  in.prompt_embeds = slice.of(embeds.prompt);
  if (embeds.negative.defined()) in.negative_prompt_embeds = slice.of(embeds.negative);
  if (embeds.pooled.defined()) in.pooled_prompt_embeds = slice.of(embeds.pooled);
  if (embeds.prompt_2.defined()) in.prompt_embeds_2 = slice.of(embeds.prompt_2);
  if (embeds.negative_2.defined()) in.negative_prompt_embeds_2 = slice.of(embeds.negative_2);
  const auto per_sample = [&](const at::Tensor& t) {
    if (!t.defined() || t.size(0) == slice.count) return t;
    std::vector<int64_t> times(size_t(t.dim()), 1);
    times[0] = slice.count;
    return t.repeat(times);
  };
  in.condition = per_sample(pictures.condition);
  in.image = per_sample(pictures.image);
  in.latents = initial_latents(job, model, slice, seeded);
  const auto recorded = recorded_noise(job, slice);
  phase("loading");
  const auto file = weights_from.weight_files.find("transformer");
  log("loading " + (file != weights_from.weight_files.end() ? file->second
                                                             : (std::filesystem::path(model.dir) / "transformer").string()) +
      " (" + model.variant.name + ") as " + std::string(c10::toString(dtype)) + " on " + device.str() +
      (weights_from.quantize ? ", linear weights kept in fp8" : "") +
      (job.fp8_gemm ? ", linear layers multiplied in float8 (--fp8_gemm)" : ""));
  for (const auto* loras : {&weights_from.loras, &weights_from.loras_2})
    for (const auto& line : io::lora_left_out(weights_from, *loras)) log(line);
  r.final_latents = denoise_stage(job, weights_from, mesh, hooks, dtype, device, std::move(in),
                                  recorded ? recorded.get() : &seeded, r, log, t0,
                                  kept ? &kept->transformers : nullptr);
  // What the loop kept in the heap, and the transformer's weights and buffers gone with the stage: back before
  // the VAE.
  compat::give_back_free_heap();
  if (!parallel::decodes(mesh)) return r;

  // Decode and write. A clip needs the VAE (the plan refuses --output without one); --save_tensors
  // decodes when it can.
  at::Tensor video;
  if (!job.output_file.empty() || (!job.save_tensors_file.empty() && model.has_vae())) {
    const auto t2 = std::chrono::steady_clock::now();
    phase("decoding");
    video = decode_and_write(job, model, mesh, hooks, dtype, device, r, log, make_room);
    r.seconds_decoding = since(t2);
  }
  if (!parallel::writes(mesh) || job.save_tensors_file.empty()) return r;
  // As the reference keeps them: the latents in the file layout, a video's frames or an image.
  record.emplace_back("final_latents", models::latents_to_file(model, r.final_latents));
  if (video.defined()) record.emplace_back(geo.has_frames ? "video" : "image", geo.has_frames ? video : video.squeeze(2));
  if (job.output_file.empty()) phase("writing");
  io::save_tensors(job.save_tensors_file, record, job_metadata(job, model, mesh.config()));
  r.outputs.push_back(job.save_tensors_file);
  log("wrote " + job.save_tensors_file);
  return r;
}

}  // namespace studio::pipeline
