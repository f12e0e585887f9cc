#include "pipeline/run_job.h"

#include <chrono>
#include <filesystem>

#include <ATen/Context.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>

#include "compat/torch_compat.h"
#include "io/tensor_file.h"
#include "models/families.h"
#include "pipeline/decode.h"
#include "plan/error.h"
#include "parallel/parallel_model.h"
#include "text/prompt.h"
#include "video/clip_writer.h"

namespace fs = std::filesystem;

namespace studio::pipeline {

namespace {

at::Device pick_device(const std::string& name) {
  if (name == "auto") return at::hasCUDA() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (name == "cpu") return at::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA())
      throw InputError("--device " + name + ": this build or machine has no CUDA device; use --device cpu");
    return at::Device(name);
  }
  throw InputError("--device '" + name + "': expected auto, cpu, cuda or cuda:N");
}

at::ScalarType pick_dtype(const std::string& name, const at::Device& dev) {
  if (name == "auto") return dev.is_cuda() ? at::kBFloat16 : at::kFloat;
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw InputError("--dtype '" + name + "': expected auto, float32, bfloat16 or float16");
}

std::string shape(const std::vector<int64_t>& s) { return io::shape_str(s); }

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One clip per sample of the batch: NAME.ext, or NAME_1.ext, NAME_2.ext ... for a batch.
std::string clip_path(const std::string& output, int64_t sample, int64_t batch) {
  if (batch == 1) return output;
  std::string base = output;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const fs::path p(base);
  return (p.parent_path() / (p.stem().string() + "_" + std::to_string(sample + 1) + p.extension().string())).string() +
         (output.back() == '/' ? "/" : "");
}

}  // namespace

std::map<std::string, std::string> job_metadata(const plan::JobSpec& job, const plan::ModelFolder& model,
                                                const plan::ParallelConfig& par) {
  return {{"generator", "DiT Studio " STUDIO_VERSION},
          {"model", model.dir},
          {"model_family", plan::family_name(model.transformer.family())},
          {"sampler", plan::sampler_name(model.scheduler.kind)},
          {"seed", std::to_string(job.seed)},
          {"height", std::to_string(job.height)},
          {"width", std::to_string(job.width)},
          {"num_frames", std::to_string(job.num_frames)},
          {"num_inference_steps", std::to_string(job.num_inference_steps)},
          {"guidance_scale", std::to_string(job.guidance_scale)},
          {"use_dynamic_cfg", job.use_dynamic_cfg ? "true" : "false"},
          {"prompt", job.prompt},
          {"negative_prompt", job.negative_prompt},
          {"prompt_embeds", job.prompt_embeds_file},
          {"num_videos_per_prompt", std::to_string(job.num_videos_per_prompt)},
          {"parallel", par.describe()}};
}

namespace {

// The prompt embeddings [videos, T, D] of every video of the job (a file's single row is repeated, as
// num_videos_per_prompt does); words are encoded on world rank 0 and broadcast.
void load_embeddings(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                     at::ScalarType dtype, const at::Device& device, DenoiseInputs& in,
                     std::vector<std::pair<std::string, at::Tensor>>& tensors,
                     const std::function<void(const std::string&)>& log) {
  const int64_t videos = job.num_videos_per_prompt;
  if (!job.prompt.empty()) {
    const int64_t L = job.max_sequence_length, D = model.text_encoder->d_model;
    // Broadcast on the rank's device (NCCL takes no host tensor), in float32 on every rank alike.
    const auto opts = at::TensorOptions(at::kFloat).device(device);
    at::Tensor pos = at::empty({1, L, D}, opts), neg = at::empty({1, L, D}, opts);
    if (mesh.rank() == 0) {
      auto e = text::encode_prompts(model, job.prompt, job.negative_prompt, int(L), dtype, device, log);
      pos = e.prompt_embeds.to(opts).contiguous();
      neg = e.negative_prompt_embeds.to(opts).contiguous();
      tensors = {{"input_ids", e.input_ids}, {"negative_input_ids", e.negative_input_ids}};
    }
    mesh.world().broadcast(pos, 0);
    mesh.world().broadcast(neg, 0);
    in.prompt_embeds = pos;
    in.negative_prompt_embeds = neg;
    tensors.insert(tensors.begin(), {{"prompt_embeds", pos}, {"negative_prompt_embeds", neg}});
  } else {
    io::TensorFile embeds(job.prompt_embeds_file, "--prompt_embeds");
    in.prompt_embeds = embeds.get("prompt_embeds", 3, "[B, T, D]");
    if (job.guidance_scale > 1) in.negative_prompt_embeds = embeds.get("negative_prompt_embeds", 3, "[B, T, D]");
  }
  for (at::Tensor* t : {&in.prompt_embeds, &in.negative_prompt_embeds}) {
    if (!t->defined() || t->size(0) == videos) continue;
    if (t->size(0) != 1)
      throw InputError("--prompt_embeds holds " + std::to_string(t->size(0)) + " prompts but the job makes " +
                       std::to_string(videos) + " videos (--num_videos_per_prompt); give 1 or " +
                       std::to_string(videos) + " rows");
    *t = t->expand({videos, -1, -1}).contiguous();
  }
}

// The latents of the last finished step, for --keep_partial.
struct PartialLatents {
  at::Tensor latents;
  int step = 0, total = 0;
};

// The caller's hooks, plus: the ranks agree on stopping (one stops, all stop at the same step, none is
// left waiting in a collective), and the last step's latents are remembered.
Hooks step_hooks(const Hooks& hooks, parallel::Mesh& mesh, const at::Device& device, PartialLatents& partial) {
  Hooks h = hooks;
  if (mesh.world_size() > 1)
    h.stop_requested = [&hooks, &mesh, device] {
      const at::Tensor mine = at::full({1}, hooks.stop() ? 1.0f : 0.0f, at::TensorOptions(at::kFloat).device(device));
      for (const auto& t : mesh.world().all_gather(mine))
        if (t.item<float>() > 0) return true;
      return false;
    };
  h.on_step = [&hooks, &partial](int step, int total, double seconds, const at::Tensor& latents) {
    partial = {latents, step, total};
    if (hooks.on_step) hooks.on_step(step, total, seconds, latents);
  };
  return h;
}

// Rank 0's videos at the step reached, beside the output the user named.
void keep_partial_latents(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                          const PartialLatents& partial, const std::function<void(const std::string&)>& log) {
  if (!partial.latents.defined()) return;
  const std::string base = !job.save_tensors_file.empty() ? job.save_tensors_file : job.output_file;
  if (base.empty()) return;
  std::string path = base;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  path += ".partial.safetensors";
  auto meta = job_metadata(job, model, mesh.config());
  meta["cancelled_after_step"] = std::to_string(partial.step) + "/" + std::to_string(partial.total);
  io::save_tensors(path, {{"partial_latents", partial.latents.cpu().contiguous()}}, meta);
  log("cancelled after step " + meta["cancelled_after_step"] + ": kept the latents in " + path);
}

// Decodes the final latents (world rank 0, or every rank with parallel VAE decoding) and writes the
// clips on world rank 0. Returns the decoded video when --save_tensors wants it. Out of memory at full
// size, it decodes once more in tiles, from the same latents: nothing is denoised again.
at::Tensor decode_outputs(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                          const Hooks& hooks, at::ScalarType dtype, const at::Device& device, JobResult& r,
                          const std::function<void(const std::string&)>& log) {
  const auto geo = plan::latent_geometry(job, model);
  const std::string vdir = (fs::path(model.dir) / "vae").string();
  auto vae = models::load_vae(model, dtype, device);
  const bool writer = mesh.rank() == 0;
  DecodeOptions opts;
  opts.tiling = job.vae_tiling;
  opts.tiles.sample_height = job.tile_sample_min_height;
  opts.tiles.sample_width = job.tile_sample_min_width;
  opts.slicing = job.vae_slicing;
  if (mesh.config().use_parallel_vae && mesh.world_size() > 1) opts.rows = &mesh.world();
  log("decoding " + std::to_string(vae->output_frames(geo.frames)) + " frames with " + vdir +
      (opts.rows ? " split by rows over " + std::to_string(mesh.world_size()) + " ranks" : "") +
      (opts.tiling ? " in tiles" : ""));

  const int64_t videos = r.final_latents.size(0);
  std::vector<std::unique_ptr<video::ClipWriter>> clips;
  std::vector<std::vector<at::Tensor>> kept;  // per video, for --save_tensors
  auto open_outputs = [&] {
    clips.clear();  // a writer dropped unfinished removes what it wrote
    r.outputs.clear();
    kept.assign(size_t(videos), {});
    r.frames = 0;
    if (!writer || job.output_file.empty()) return;
    video::ClipInfo info;
    info.width = job.width;
    info.height = job.height;
    info.fps = job.fps;
    info.metadata = job_metadata(job, model, mesh.config());
    for (int64_t b = 0; b < videos; ++b) {
      r.outputs.push_back(clip_path(job.output_file, b, videos));
      clips.push_back(std::make_unique<video::ClipWriter>(r.outputs.back(), info));
    }
  };
  auto on_frames = [&](const at::Tensor& frames, int first_video, int first_frame) {
    if (hooks.stop()) throw Cancelled();
    r.frames = std::max(r.frames, first_frame + int(frames.size(2)));
    for (int64_t b = 0; b < frames.size(0) && !job.save_tensors_file.empty(); ++b)
      kept[size_t(first_video + b)].push_back(frames.narrow(0, b, 1).cpu());
    if (clips.empty() && !hooks.on_frames) return;
    const auto rgb = to_rgb8(frames);  // [b, T, H, W, 3]
    for (int64_t b = 0; b < rgb.size(0) && !clips.empty(); ++b)
      for (int64_t t = 0; t < rgb.size(1); ++t)
        clips[size_t(first_video + b)]->add_frame(rgb[b][t].data_ptr<uint8_t>());
    if (hooks.on_frames) hooks.on_frames(rgb, first_video, first_frame);
  };
  open_outputs();
  try {
    try {
      decode_latents(*vae, r.final_latents, geo.pad_frames(), on_frames, opts);
    } catch (const std::exception& e) {
      if (opts.tiling || opts.rows || !is_out_of_memory(e.what())) throw;
      const std::string what = e.what();
      log("out of memory decoding at full size (" + what.substr(0, what.find('\n')) + "); decoding again in tiles of " +
          std::to_string(opts.tiles.sample_height) + " x " + std::to_string(opts.tiles.sample_width) +
          " pixels from the same latents");
      if (hooks.on_phase) hooks.on_phase("decoding");
      opts.tiling = true;
      open_outputs();
      decode_latents(*vae, r.final_latents, geo.pad_frames(), on_frames, opts);
    }
  } catch (const Cancelled&) {
    // The frames decoded so far make a shorter clip; without --keep_partial the writers discard theirs.
    if (job.keep_partial && r.frames > 0)
      for (size_t b = 0; b < clips.size(); ++b) {
        clips[b]->finish();
        log("cancelled: kept the " + std::to_string(r.frames) + " frames decoded so far in " + r.outputs[b]);
      }
    throw;
  }
  if (writer && !clips.empty()) {
    if (hooks.on_phase) hooks.on_phase("writing");
    for (auto& c : clips) {
      c->finish();
      r.encoder = c->encoder();
    }
    log("wrote " + job.output_file + " (" + r.encoder + ", " + std::to_string(r.frames) + " frames)");
  }
  if (!writer || job.save_tensors_file.empty()) return {};
  std::vector<at::Tensor> per_video;
  for (auto& parts : kept) per_video.push_back(at::cat(parts, 2));
  return at::cat(per_video, 0);
}

}  // namespace

JobResult run_job(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh, const Hooks& hooks,
                  const std::function<void(const std::string&)>& log) {
  JobResult r;
  auto t0 = std::chrono::steady_clock::now();
  const at::Device device = pick_device(job.device);
  const at::ScalarType dtype = pick_dtype(job.dtype, device);
  compat::allow_tf32(job.allow_tf32);
  const auto geo = plan::latent_geometry(job, model);
  auto phase = [&](const char* name) {
    if (hooks.on_phase) hooks.on_phase(name);
  };

  DenoiseInputs in;
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // what --save_tensors writes
  if (!job.prompt.empty()) phase("encoding");
  load_embeddings(job, model, mesh, dtype, device, in, tensors, log);
  in.num_inference_steps = job.num_inference_steps;
  in.guidance_scale = job.guidance_scale;
  in.use_dynamic_cfg = job.use_dynamic_cfg;
  const int64_t videos = job.num_videos_per_prompt;
  const std::vector<int64_t> latent_shape{videos, geo.padded_frames, geo.channels, geo.height, geo.width};

  // This data-parallel group's videos: [first, first + mine).
  const int64_t mine = videos / mesh.config().data_parallel_degree, first = mesh.coords().data * mine;
  auto my_rows = [&](const at::Tensor& t, int64_t dim) { return t.narrow(dim, first, mine).contiguous(); };
  in.prompt_embeds = my_rows(in.prompt_embeds, 0);
  if (in.negative_prompt_embeds.defined()) in.negative_prompt_embeds = my_rows(in.negative_prompt_embeds, 0);

  sampling::SeededNoise seeded(job.seed + uint64_t(first), int(mine));
  if (!job.latents_file.empty()) {
    auto all = io::TensorFile(job.latents_file, "--latents").get("latents_init", 5, "[B, F, C, H, W]");
    if (all.sizes().vec() != latent_shape)
      throw InputError("--latents " + job.latents_file + ": latents_init has shape " + shape(all.sizes().vec()) +
                       " but --height " + std::to_string(job.height) + " --width " + std::to_string(job.width) +
                       " --num_frames " + std::to_string(job.num_frames) + " need " + shape(latent_shape));
    in.latents = my_rows(all, 0);
  } else {
    std::vector<int64_t> s = latent_shape;
    s[0] = mine;
    in.latents = seeded.draw(s);
  }
  std::unique_ptr<sampling::RecordedNoise> recorded;
  if (!job.sampler_noise_file.empty())
    recorded = std::make_unique<sampling::RecordedNoise>(my_rows(
        io::TensorFile(job.sampler_noise_file, "--sampler_noise").get("scheduler_noise", 6, "[steps, B, F, C, H, W]"),
        1));

  phase("loading");
  const std::string tdir = (fs::path(model.dir) / "transformer").string();
  log("loading " + tdir + " (" + plan::family_name(model.transformer.family()) + ") as " +
      std::string(c10::toString(dtype)) + " on " + device.str());
  {
    auto transformer = models::load_transformer(model, dtype, device);
    PartialLatents partial;
    r.seconds_loading = since(t0);
    log("denoising " + shape(latent_shape) + " latents (" + std::to_string(geo.video_tokens) + " video + " +
        std::to_string(in.prompt_embeds.size(1)) + " text tokens), " + std::to_string(job.num_inference_steps) +
        " steps of " + plan::sampler_name(model.scheduler.kind) + ", " + mesh.config().describe());
    auto t1 = std::chrono::steady_clock::now();
    sampling::NoiseSource* noise = recorded ? static_cast<sampling::NoiseSource*>(recorded.get()) : &seeded;
    ModelCall call;
    std::shared_ptr<parallel::ParallelTransformer> parallel_model;
    if (mesh.world_size() > 1) {
      parallel_model = std::make_shared<parallel::ParallelTransformer>(*transformer, mesh);
      call = [parallel_model](const models::StepInputs& in, const models::Positions& p) {
        return (*parallel_model)(in, p);
      };
    }
    phase("denoising");
    at::Tensor latents;
    try {
      latents = denoise(*transformer, model.scheduler, in, noise, step_hooks(hooks, mesh, device, partial), call);
    } catch (const Cancelled&) {
      if (job.keep_partial && mesh.rank() == 0) keep_partial_latents(job, model, mesh, partial, log);
      throw;
    }
    r.final_latents = at::cat(mesh.group(plan::Dim::Data).all_gather(latents.contiguous()), 0).cpu();
    r.seconds_denoising = since(t1);
  }  // the transformer's weights are released before the VAE loads
  const bool parallel_vae = mesh.config().use_parallel_vae && mesh.world_size() > 1;
  if (mesh.rank() != 0 && !parallel_vae) return r;  // world rank 0 decodes and writes

  // A clip needs the VAE (the plan refuses --output without one); --save_tensors decodes when it can.
  at::Tensor video;
  if (!job.output_file.empty() || (!job.save_tensors_file.empty() && model.vae)) {
    auto t2 = std::chrono::steady_clock::now();
    phase("decoding");
    video = decode_outputs(job, model, mesh, hooks, dtype, device, r, log);
    r.seconds_decoding = since(t2);
  }
  if (mesh.rank() != 0) return r;
  tensors.emplace_back("final_latents", r.final_latents);
  if (video.defined()) tensors.emplace_back("video", video);
  if (!job.save_tensors_file.empty()) {
    if (job.output_file.empty()) phase("writing");
    io::save_tensors(job.save_tensors_file, tensors, job_metadata(job, model, mesh.config()));
    r.outputs.push_back(job.save_tensors_file);
    log("wrote " + job.save_tensors_file);
  }
  return r;
}

}  // namespace studio::pipeline
