#include "pipeline/outputs.h"

#include <filesystem>

#include <ATen/ops/cat.h>

#include "hub/hashing.h"
#include "models/family_runtime.h"
#include "parallel/job_ranks.h"
#include "pipeline/decode.h"
#include "pipeline/making_room.h"
#include "pipeline/reproduction.h"
#include "plan/human_bytes.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/lora_choice.h"
#include "plan/output_format.h"
#include "plan/run_settings.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"
#include "video/picture.h"

namespace fs = std::filesystem;

namespace studio::pipeline {

namespace {

// The files a run wrote, for its log: "clip.mp4", or "clip_1.mp4, clip_2.mp4".
std::string written(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : ", ") + f;
  return out;
}

// The dtype the run computed in, as --dtype names it.
std::string dtype_name(at::ScalarType dtype) {
  return dtype == at::kBFloat16 ? "bfloat16" : dtype == at::kHalf ? "float16" : "float32";
}

}  // namespace

std::map<std::string, std::string> job_metadata(const plan::JobSpec& job, const plan::ModelFolder& model,
                                                const plan::ParallelConfig& par) {
  auto m = plan::settings_metadata(job, par);
  m["model"] = model.dir;
  m["model_family"] = model.variant.name;
  m["sampler"] = plan::rules_of(model).sampler_name(model);
  if (job.use_fbcache || job.use_teacache || job.use_magcache)
    m["cache_threshold"] = plan::shortest_number(plan::cache_threshold(job, model));
  // The pictures a clip started from: where they were, and what they were (the file may move or change).
  for (auto [key, path, flag] : {std::tuple{"image", &job.image_file, "--image"},
                                 std::tuple{"last_image", &job.last_image_file, "--last_image"}})
    if (!path->empty()) {
      const auto p = video::read_picture(*path, flag);
      m[key] = *path;
      m[std::string(key) + "_size"] = std::to_string(p.width) + "x" + std::to_string(p.height);
      m[std::string(key) + "_sha256"] = hub::sha256_of_file(*path);
    }
  // A single weights file's size in bytes beside its path: which file of that name it was (hashing one of many
  // gigabytes would delay every run by as long as reading it).
  for (const char* key : {"transformer", "transformer_2", "text_encoder", "text_encoder_2"})
    if (const auto it = m.find(key); it != m.end()) {
      std::error_code ec;
      if (const auto bytes = std::filesystem::file_size(it->second, ec); !ec)
        m[std::string(key) + "_bytes"] = std::to_string(bytes);
    }
  // The LoRAs merged, as given (each file with its strength), and what each file was, in the same order.
  for (auto [key, list] : {std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}})
    if (!list->empty()) {
      m[key] = *list;
      std::string sums;
      for (const auto& use : plan::parse_loras(*list)) sums += (sums.empty() ? "" : ",") + hub::sha256_of_file(use.file);
      m[std::string(key) + "_sha256"] = sums;
    }
  return m;
}

at::Tensor decode_and_write(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                            const Hooks& hooks, at::ScalarType dtype, const at::Device& device, JobResult& r,
                            const std::function<void(const std::string&)>& log,
                            const std::function<bool()>& make_room) {
  const auto geo = plan::latent_geometry(job, model);
  const std::string vdir = (fs::path(model.dir) / "vae").string();
  auto vae = models::load_vae(model, dtype, device);
  const bool writer = parallel::writes(mesh);
  DecodeOptions opts;
  opts.tiling = job.vae_tiling;
  opts.tiles.sample_height = job.tile_sample_min_height;
  opts.tiles.sample_width = job.tile_sample_min_width;
  opts.slicing = job.vae_slicing;
  opts.rows = parallel::decode_rows(mesh);
  opts.progress = [&](int done, int total) {
    if (hooks.on_decode_progress) hooks.on_decode_progress(done, total);
    if (done < total && hooks.stop()) throw Cancelled();
  };
  log("decoding " + plan::counted(vae->output_frames(geo.frames), "frame", "frames") + " with " + vdir +
      (opts.rows ? " split by rows over " + std::to_string(mesh.world_size()) + " ranks" : "") +
      (opts.tiling ? " in tiles" : ""));

  const int64_t videos = r.final_latents.size(0);
  // An image is written whole once decoded; a clip frame by frame as its batches come.
  const bool image = !job.output_file.empty() && plan::is_image(plan::format_for(job.output_file));
  std::vector<std::unique_ptr<video::ClipWriter>> clips;
  std::vector<at::Tensor> images;             // per sample, RGB8 [H, W, 3]
  std::vector<std::vector<at::Tensor>> kept;  // per video, for --save_tensors
  std::vector<int> decoded;                   // per video, its frames so far (one video after another when slicing)
  auto open_outputs = [&] {
    clips.clear();  // a writer dropped unfinished removes what it wrote
    r.outputs.clear();
    kept.assign(size_t(videos), {});
    decoded.assign(size_t(videos), 0);
    images.assign(size_t(videos), {});
    r.frames = 0;
    if (!writer || job.output_file.empty()) return;
    if (image) {
      for (int64_t b = 0; b < videos; ++b) r.outputs.push_back(plan::output_of_video(job.output_file, int(b), int(videos)));
      return;
    }
    video::ClipInfo info;
    info.width = job.width;
    info.height = job.height;
    info.fps = job.fps;
    info.metadata = job_metadata(job, model, mesh.config());
    info.metadata["dtype"] = dtype_name(dtype);
    for (int64_t b = 0; b < videos; ++b) {
      r.outputs.push_back(plan::output_of_video(job.output_file, int(b), int(videos)));
      clips.push_back(std::make_unique<video::ClipWriter>(r.outputs.back(), info));
    }
  };
  auto on_frames = [&](const at::Tensor& frames, int first_video, int first_frame) {
    if (hooks.stop()) throw Cancelled();
    r.frames = std::max(r.frames, first_frame + int(frames.size(2)));
    for (int64_t b = 0; b < frames.size(0); ++b) decoded[size_t(first_video + b)] = first_frame + int(frames.size(2));
    for (int64_t b = 0; b < frames.size(0) && !job.save_tensors_file.empty(); ++b)
      kept[size_t(first_video + b)].push_back(frames.narrow(0, b, 1).cpu());
    if (clips.empty() && !image && !hooks.on_frames) return;
    const auto rgb = to_rgb8(frames);  // [b, T, H, W, 3]
    for (int64_t b = 0; b < rgb.size(0) && image && writer; ++b) images[size_t(first_video + b)] = rgb[b][0];
    for (int64_t b = 0; b < rgb.size(0) && !clips.empty(); ++b)
      for (int64_t t = 0; t < rgb.size(1); ++t)
        clips[size_t(first_video + b)]->add_frame(rgb[b][t].data_ptr<uint8_t>());
    if (hooks.on_frames) hooks.on_frames(rgb, first_video, first_frame);
  };
  open_outputs();
  try {
    for (bool whole_again = false;;) {
      try {
        decode_latents(*vae, r.final_latents, geo.pad_frames(), on_frames, opts);
        break;
      } catch (const std::exception& e) {
        if (opts.tiling || opts.rows || !is_out_of_memory(e.what())) throw;
        if (!whole_again && room_made(e, make_room, "decoding", "the decode runs again at full size", log)) {
          whole_again = true;
        } else {
          const std::string what = e.what();
          log("out of memory decoding at full size (" + what.substr(0, what.find('\n')) + "); decoding again in tiles "
              "of " + std::to_string(opts.tiles.sample_height) + " x " + std::to_string(opts.tiles.sample_width) +
              " pixels from the same latents");
          opts.tiling = true;
        }
        if (hooks.on_phase) hooks.on_phase("decoding");
        open_outputs();
      }
    }
  } catch (const Cancelled&) {
    // The denoising is done: its latents are kept whole, and the frames decoded so far make a shorter clip.
    // Without --keep_partial the writers discard theirs.
    if (!job.keep_partial) throw;
    if (!writer) throw cancelled_on_a_reader();
    // The latents first: a clip that cannot be finished (a full disk) must not lose them.
    std::string kept = keep_partial_latents(job, model, job_metadata(job, model, mesh.config()),
                                            {r.final_latents, job.num_inference_steps, job.num_inference_steps});
    for (size_t b = 0; b < clips.size(); ++b) {
      if (decoded[b] == 0) continue;  // dropped unfinished: its writer removes what it began
      const std::string cut = "kept the first " + std::to_string(decoded[b]) + " of " +
                              std::to_string(vae->output_frames(geo.frames)) + " frames";
      clips[b]->finish({{"cancelled", cut}});
      kept += (kept.empty() ? "" : "; ") + cut + " in " + r.outputs[b];
    }
    if (kept.empty()) throw;
    throw Cancelled(kept);
  }
  if (writer && !clips.empty()) {
    if (hooks.on_phase) hooks.on_phase("writing");
    for (auto& c : clips) {
      c->finish();
      r.encoder = c->encoder();
    }
    log("wrote " + written(r.outputs) + " (" + r.encoder + ", " + plan::counted(r.frames, "frame", "frames") + ")");
  }
  if (writer && image) {
    if (hooks.on_phase) hooks.on_phase("writing");
    video::ImageInfo info;
    info.width = job.width;
    info.height = job.height;
    info.metadata = job_metadata(job, model, mesh.config());
    info.metadata["dtype"] = dtype_name(dtype);
    for (size_t b = 0; b < images.size(); ++b) {
      info.metadata["seed"] = std::to_string(job.seed + b);  // image b's own generator
      r.encoder = video::write_image(r.outputs[b], images[b].contiguous().data_ptr<uint8_t>(), info);
    }
    log("wrote " + written(r.outputs) + " (" + r.encoder + ")");
  }
  if (!writer || job.save_tensors_file.empty()) return {};
  std::vector<at::Tensor> per_video;
  for (auto& parts : kept) per_video.push_back(at::cat(parts, 2));
  return at::cat(per_video, 0);
}

}  // namespace studio::pipeline
