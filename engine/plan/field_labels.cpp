#include "plan/field_labels.h"

#include <cctype>
#include <iterator>

namespace studio::plan {

namespace {

const FieldText kFields[] = {
    {"model", "Model folder",
     "A diffusers model folder (model_index.json and its parts). The demo models run anywhere in seconds; the "
     "Models tab downloads the real ones."},
    {"model_dir", "Model folder", "A diffusers model folder (model_index.json and its parts)."},
    {"prompt", "Prompt",
     "What to generate, in words. The text encoder reads a limited number of tokens; the count below says how "
     "many this prompt uses, and what lies past the limit is ignored."},
    {"prompt_2", "Prompt for T5",
     "FLUX.1 only: the text its second encoder (T5, 512 tokens) reads instead of the prompt. Use it for a long "
     "description when the prompt (read by CLIP, 77 tokens) should stay short."},
    {"negative_prompt", "Negative prompt",
     "What the picture should not show. Guidance steers away from it; it has no effect with guidance at 1 or "
     "below."},
    {"prompt_embeds", "Prompt embeddings", "Precomputed text embeddings (a safetensors file) instead of words."},
    {"seed", "Seed",
     "The starting noise. The same seed and settings give the same result; change it to get another take of "
     "the same prompt."},
    {"seed_mode", "Seed mode",
     "Fixed: every run uses the seed shown. Random: a new seed each run. +1: the next seed each run, to go "
     "through takes in order."},
    {"preset", "Preset",
     "Size, length and steps together: the model's own size, other shapes with about as many pixels, and a "
     "quick draft. Says Custom once a field differs from every preset."},
    {"width", "Width", "In pixels, a multiple of the model's step. More pixels take longer and more memory."},
    {"height", "Height", "In pixels, a multiple of the model's step. More pixels take longer and more memory."},
    {"num_frames", "Frames",
     "The clip's length in frames (its seconds are frames / frames per second). The model takes counts in its "
     "own steps (e.g. 4k + 1)."},
    {"fps", "Frames per second", "How fast the clip plays; it does not change what is generated, only its "
                                 "length in seconds."},
    {"num_inference_steps", "Steps",
     "Denoising steps. More steps give finer detail and take proportionally longer; drafts use about 20."},
    {"guidance_scale", "Guidance",
     "Classifier-free guidance (CFG): how strongly the result follows the prompt. Higher follows it more "
     "closely but can look overdone; 1 or below turns it off (one branch per step, twice as fast)."},
    {"guidance_scale_2", "Guidance, second expert",
     "Wan2.2: the guidance of the expert that does the last, low-noise steps (detail and texture); the one "
     "above is the first expert's (layout and motion)."},
    {"use_dynamic_cfg", "Dynamic guidance",
     "CogVideoX: guidance that rises over the steps on a cosine schedule, as its pipeline's use_dynamic_cfg; "
     "often gives steadier motion."},
    {"step_cache", "Step cache",
     "Reuses the blocks' work on steps that change little: faster, and the result drifts from the uncached "
     "one as the threshold rises. First-Block Cache decides after the first block; TeaCache before any, from "
     "the model's timestep signal. Not with PipeFusion."},
    {"use_fbcache", "First-Block Cache", "Skips the blocks after the first on steps whose first block changes "
                                         "little."},
    {"use_teacache", "TeaCache", "Skips every block while the accumulated change of the input stays small."},
    {"use_magcache", "MagCache", "Skips while the calibrated magnitude error stays small."},
    {"magcache_ratios", "MagCache ratios", "The model's calibrated ratios, a file that calibration wrote."},
    {"magcache_calibrate", "MagCache calibration", "Measures the ratios on an uncached run and writes them."},
    {"cache_threshold", "Reuse threshold",
     "How little a step may change to be reused: 0 reuses nothing; higher is faster and less faithful. Each "
     "method starts from its default for the model."},
    {"max_sequence_length", "Text tokens", "How many tokens of the prompt the text encoder reads."},
    {"num_videos_per_prompt", "Videos per prompt", "How many results one run makes from the prompt."},
    {"output", "Output", "Where the result is written."},
    {"enable_tiling", "VAE tiling",
     "Decodes the frames in overlapping tiles: far less memory for large sizes, a little slower. Use it when "
     "the decode runs out of memory."},
    {"vae_tiling", "VAE tiling",
     "Decodes the frames in overlapping tiles: far less memory for large sizes, a little slower. Use it when "
     "the decode runs out of memory."},
    {"devices", "Devices",
     "The GPUs the ranks run on, one process each (uncheck one to leave it free); with no GPU, the ranks run "
     "as processes on the CPU."},
    {"worker", "Worker", "The dit-worker program that runs the ranks, and what it was built with."},
    {"ulysses_degree", "Ulysses",
     "Sequence parallel (DeepSpeed-Ulysses): each rank attends with a share of the attention heads after an "
     "all-to-all. Fast on GPUs joined by NVLink; at most the model's heads. The first choice for 2 to 8 GPUs."},
    {"ring_degree", "Ring",
     "Sequence parallel (Ring attention): each rank keeps a share of the tokens and passes keys and values "
     "around the ring. Works for any head count and overlaps sending with computing; use it beyond what the "
     "heads allow Ulysses, or across slower links."},
    {"pipefusion_parallel_degree", "PipeFusion stages",
     "Splits the model's layers into stages, one per rank, and pipelines patches of the image through them: "
     "each rank holds only its layers' weights. Use it when the model does not fit one GPU."},
    {"num_pipeline_patch", "PipeFusion patches",
     "How many patches PipeFusion pipelines through its stages: more patches keep the stages busier but send "
     "more, smaller messages. At least the number of stages."},
    {"warmup_steps", "Warm-up steps",
     "PipeFusion's synchronous first steps, before it reuses the previous step's activations for the other "
     "patches. More warm-up is closer to the one-process result and slower; all steps give it exactly."},
    {"use_cfg_parallel", "CFG parallel",
     "Runs classifier-free guidance's two branches (with and without the prompt) on two groups of ranks at "
     "once: twice the speed for 2x the GPUs, with little communication. Only when guidance is on."},
    {"data_parallel_degree", "Data parallel",
     "Independent copies of the whole job, each making its share of the videos. Use it for several results "
     "per prompt; it does not speed up a single one."},
    {"use_parallel_vae", "Parallel VAE",
     "Every rank decodes a band of rows of the frames: the decode's time and memory divided among the ranks, "
     "with the same result as one process."},
    {"world_size", "Processes", "The ranks the configuration needs: data x CFG x PipeFusion x Ring x Ulysses."},
    {"memory", "Memory", "The estimated memory of each rank against what each device has."},
};

bool flag_char(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

const FieldText* field_text(const std::string& field) {
  for (const auto& f : kFields)
    if (field == f.field) return &f;
  return nullptr;
}

std::string field_label(const std::string& field) {
  if (const auto* f = field_text(field)) return f->label;
  std::string out = field;
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

std::string field_help(const std::string& field) {
  const auto* f = field_text(field);
  return f ? f->help : "";
}

std::string in_window_words(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    // A flag: "--" then a lower-case name, not inside a word ("a--b" stays).
    const bool starts = message.compare(i, 2, "--") == 0 && i + 2 < message.size() && flag_char(message[i + 2]) &&
                        (i == 0 || !std::isalnum(static_cast<unsigned char>(message[i - 1])));
    if (!starts) {
      out += message[i++];
      continue;
    }
    size_t end = i + 2;
    while (end < message.size() && flag_char(message[end])) ++end;
    out += field_label(message.substr(i + 2, end - i - 2));
    i = end;
  }
  return out;
}

}  // namespace studio::plan
