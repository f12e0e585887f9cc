// A model family as the launcher, the studio and the workers see it, torch-free: its row in the registry
// (plan/families/registry.h). How its folders are recognised and read, its names and repositories, which
// encoder reads which prompt, its defaults, presets, geometry, the rules its jobs follow and its memory.
// Each family answers in its own file (plan/families/<name>.cpp); plan/job.cpp and plan/parallel.cpp hold
// the rules that are the same for every family and ask the family for the rest. The same family's LibTorch
// half (its classes, prompt encoding, latent packing) is its row in models/ (models/family_runtime.h).
// docs/adding-a-family.md says how to add one.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plan/job.h"
#include "plan/single_file.h"

namespace studio::plan {

struct ParallelConfig;
struct MemoryEstimate;
class Fields;

// A Hugging Face repository of a family, as the studio's Models view offers it: what a download brings
// and the GPU memory one needs (the figures' sources are in the family's file).
struct KnownRepo {
  std::string variant;      // the Variant::id its folder reads as: "cogvideox-2b"
  std::string name;         // "CogVideoX-2b"
  std::string repo_id;      // "THUDM/CogVideoX-2b"
  double download_gb = 0;   // what download_repo fetches (the components' safetensors and configs), 10^9 bytes
  double gpu_memory_gb = 0; // one GPU's memory for the default job at the recommended dtype
  std::string memory_note;  // what that figure assumes, and its source
  bool gated = false;       // needs a token and the license accepted on the model's page
  bool image_to_video = false;  // it animates a picture (--image): what a family offers when one is given
  bool last_image = false;      // it joins a first and a last picture (--last_image)
  bool words_alone = false;     // it also runs from words alone, without a picture (Wan2.2 TI2V-5B)
};


// The text encoders a family runs, and which of the job's texts each reads.
enum class TextEncoder { T5, CLIP, Qwen };
struct EncoderInput {
  TextEncoder encoder;
  std::string field;  // the JobSpec field it reads: "prompt", "prompt_2" or "negative_prompt"
};
// The job's text in that field.
const std::string& job_text(const JobSpec& job, const std::string& field);

// A size the studio offers besides the family's default and its draft (Wan's 720p).
struct SizePreset {
  std::string label;
  int width = 0, height = 0;
};

// What a block does besides its GEMMs and attention, as the cost model counts it (docs/cost-model.md):
// the operations it dispatches (each costs a launch, whatever its size), and the values its elementwise
// work (norms, modulation, activations, residuals, rotary embedding) reads and writes per token it holds,
// in units of the width and of the feed-forward's hidden width. tests/test_op_counts counts them on the
// families' blocks as they run.
struct BlockCosts {
  double ops_per_block = 0;      // averaged over the model's kinds of block (FLUX has two)
  double values_per_width = 0;   // per token per block, times the width
  double values_per_hidden = 0;  // per token per block, times `hidden`
  int64_t hidden = 0;            // the feed-forward's hidden width
  int ops_per_call = 0;          // outside the blocks, once per model call (embeddings, output head)
  int ops_per_step = 0;          // outside the model's calls, once per step (guidance, the sampler)
  double values_per_token(double width) const { return values_per_width * width + values_per_hidden * double(hidden); }
};

class Family {
 public:
  virtual ~Family() = default;

  // Who it is: "CogVideoX", "FLUX.1", "Wan", as the Models view names it; the model_index.json classes
  // whose folders it reads ("CogVideoXPipeline"); the prefix that tells a cached repo of the family
  // apart even when this version cannot run that pipeline ("CogVideoX" for CogVideoXImageToVideoPipeline).
  virtual const char* name() const = 0;
  virtual std::vector<std::string> pipelines() const = 0;
  virtual const char* class_prefix() const = 0;
  virtual std::vector<KnownRepo> known_repos() const = 0;

  // Reads the family's parts of the folder m.dir (model_index.json read as `index`) into m.parts and names
  // m.variant; throws InputError naming the file and field.
  virtual void read_parts(ModelFolder& m, const Fields& index) const = 0;
  // The transformer's width of the T5 embeddings and the config field that says it ("text_dim").
  virtual std::pair<std::string, int> t5_width(const ModelFolder& m) const = 0;
  virtual bool has_vae(const ModelFolder& m) const = 0;
  virtual int vae_scale_spatial(const ModelFolder& m) const = 0;
  virtual int vae_scale_temporal(const ModelFolder&) const { return 1; }

  // The text path: where T5 lives and what messages call it; whether prompts are cleaned first (Wan's
  // ftfy-like step, text/tokenize/prompt_clean.h); which encoder reads which text, in the order they run;
  // what the folder lacks for words (the base says T5's parts).
  virtual std::string t5_part() const { return "text_encoder"; }
  virtual std::string t5_tokenizer_part() const { return "tokenizer"; }
  virtual const char* t5_name() const { return "T5"; }
  // Where CLIP's tokenizer lives ("tokenizer" in FLUX.1), "" for a family without CLIP.
  virtual std::string clip_tokenizer_part() const { return ""; }
  virtual bool cleans_prompts() const { return false; }
  virtual std::vector<EncoderInput> encoder_inputs(const JobSpec& job) const = 0;
  virtual std::vector<std::string> missing_text_parts(const ModelFolder& m) const;
  // The width of the pooled text vector the transformer takes (FLUX.1's CLIP), 0 if none: --prompt_embeds
  // then holds pooled_prompt_embeds too.
  virtual int pooled_text_width(const ModelFolder&) const { return 0; }

  // Sizes the studio offers besides the default and the draft.
  virtual std::vector<SizePreset> size_presets(const ModelFolder&) const { return {}; }
  // Whether --guidance_scale_2 applies (Wan2.2's second expert), and the expert switch: the share of the
  // training timesteps below which the second expert runs, 0 for a model of one transformer.
  virtual bool takes_guidance_2(const ModelFolder& m) const { return second_expert_boundary(m) > 0; }
  virtual double second_expert_boundary(const ModelFolder&) const { return 0; }

  virtual std::string sampler_name(const ModelFolder& m) const = 0;
  virtual bool makes_video() const = 0;         // frames and fps apply
  virtual bool classifier_free() const = 0;     // guidance runs a second branch (CFG parallelism applies)
  virtual bool dynamic_cfg() const { return false; }  // --use_dynamic_cfg (CogVideoX's cosine schedule) applies
  virtual bool takes_prompt_2() const = 0;      // a second text encoder reads its own prompt (--prompt_2)
  // Whether a LoRA's text-encoder modules apply (FLUX.1's CLIP and T5, as diffusers' FluxLoraLoaderMixin loads
  // the text encoder's), or are left out as the reference leaves them out of the family's pipeline.
  virtual bool takes_text_encoder_loras() const { return false; }
  // Whether a LoRA module's name (its file's prefix dropped, dots and underscores both written as dots: kohya's
  // "double_blocks_0_img_attn_qkv" reads "double.blocks.0.img.attn.qkv") is a block of this family's transformer,
  // in diffusers' layout or the original checkpoint's (io/safetensors/lora_files.h).
  virtual bool names_lora_module(const std::string& module) const = 0;
  // Image-to-video: whether the folder's model can start from a picture (--image), whether it needs one (else
  // it also runs from words alone: Wan2.2 TI2V-5B), and whether it can also end on one (--last_image).
  virtual bool takes_image(const ModelFolder&) const { return false; }
  virtual bool needs_image(const ModelFolder& m) const { return takes_image(m); }
  virtual bool takes_last_image(const ModelFolder&) const { return false; }
  // The video's {width, height} for a picture of `width` x `height` pixels where the family sizes the video by
  // the picture (HunyuanVideo-1.5 image-to-video's aspect-ratio buckets); {0, 0}: the job's size applies.
  virtual std::pair<int, int> size_for_picture(const ModelFolder&, int, int) const { return {0, 0}; }
  // Whether the picture is scaled to cover the video's size and cropped at the centre (HunyuanVideo-1.5),
  // rather than stretched to it (CogVideoX, Wan).
  virtual bool crops_picture(const ModelFolder&) const { return false; }
  virtual int pixel_step(const ModelFolder& m) const = 0;  // height and width are multiples of it
  virtual int attention_heads(const ModelFolder& m) const = 0;
  virtual int hidden_size(const ModelFolder& m) const = 0;  // the transformer's width (what its blocks' layers read)
  virtual int blocks(const ModelFolder& m) const = 0;      // what PipeFusion divides into stages
  virtual int train_steps(const ModelFolder& m) const = 0; // the sampler's training timesteps
  // TeaCache's published rescaling polynomial for the model (highest power first, as numpy's poly1d) and
  // the mildest threshold its authors published for the family (docs/design.md, "Step caching").
  virtual std::vector<double> teacache_coefficients(const ModelFolder& m) const = 0;
  virtual double teacache_threshold() const = 0;
  // Whether the reference pipeline calls the transformer once per guidance branch (Wan: "cond", then
  // "uncond") rather than once for the batch of both: a step cache then keeps a context per branch.
  virtual bool calls_per_guidance_branch() const { return false; }
  // Whether those calls' texts differ in length (HunyuanVideo-1.5's real rows alone), so that they can never be
  // one batch: PipeFusion, whose pipelined steps keep one set of activations, cannot run them without CFG ranks.
  virtual bool branch_texts_differ() const { return false; }
  // The cost model's counts (plan/cost_model.h, docs/cost-model.md), FLOPs as 2 per multiply-add: one
  // block's GEMMs per token it holds (the linear layers' weights times 2); its attention per query-key pair
  // (Q K^T and P V over the inner width: 4 x heads x head_dim); whether the text joins the attended sequence
  // (else the latent attends to it in a cross-attention); the VAE's decode of one video (`frames` 1 for an image),
  // 0 for a folder without a VAE.
  virtual double gemm_flops_per_token(const ModelFolder& m) const = 0;
  virtual double attention_flops_per_pair(const ModelFolder& m) const = 0;
  virtual bool joint_text() const { return true; }
  virtual double vae_decode_flops(const ModelFolder& m, int height, int width, int frames) const = 0;
  virtual BlockCosts block_costs(const ModelFolder& m) const = 0;

  // One file standing for transformer/ (expert 1: transformer_2/) in the family's original checkpoint layout
  // (--transformer FILE): each weight's diffusers name -> its rows in the file; empty when `names` (the file's,
  // without a checkpoint prefix) are diffusers' already, or the family has no other layout.
  virtual TensorRenames transformer_renames(const ModelFolder&, const std::set<std::string>& names) const {
    (void)names;
    return {};
  }
  // Every transformer weight as the family's original checkpoints name it (Black Forest Labs', Wan's): what a
  // LoRA in that layout names, as transformer_renames maps a file of all of them; empty without such a layout.
  virtual TensorRenames original_layout(const ModelFolder&) const { return {}; }
  // general.architecture of the family's GGUF files ("flux"); a GGUF of another architecture is refused.
  virtual const char* gguf_architecture() const = 0;

  // Fills the job's 0-valued sizes and steps and an unset guidance scale, as the reference pipeline does.
  virtual void apply_defaults(JobSpec& job, const ModelFolder& m) const = 0;
  // The family's own problems with a job (its sizes, frames, text length, what it cannot do yet).
  virtual void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const = 0;
  virtual LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const = 0;
  virtual MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m,
                                int bytes_per_value) const = 0;
};
// The family's image-to-video repositories, e.g. for a picture given to a model that takes none.
std::vector<KnownRepo> image_to_video_repos(const Family& family);

// The folder's family (read_model_folder sets it; a logic error if nothing did).
const Family& rules_of(const ModelFolder& m);

constexpr double kGiB = 1024.0 * 1024 * 1024;
// A rank's transformer memory: the weights (`block_params` per block, PipeFusion dividing the blocks,
// `other_params` once), with packed weights (quantized) the dense copy of the one that runs (`widest_linear`
// values: the largest linear layer's, in the run's dtype; io::DenseScratch), and the activations of the tokens
// it holds for its share of the batch through one block at a time (about 16 values per token and channel of
// `width`), plus the keys and values an attention gathers, plus `float32_per_token` values per latent token and
// channel held in float32 (Wan2.2 TI2V's six modulation vectors, one per token).
double transformer_gib(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, double block_params,
                       double other_params, double widest_linear, double width, int bytes_per_value,
                       double float32_per_token = 0);
// One block's weights as the job keeps them (plan::weight_bytes_per_param).
double block_weight_gib(const JobSpec& job, const ModelFolder& m, double block_params, double other_params,
                        int bytes_per_value);

// A video's frames against a causal VAE that compresses time `temporal`x keeping the first frame: "--num_frames
// 10: must be 4k+1 (...); 9 or 13 would work".
void check_frames(int num_frames, int temporal, std::vector<Problem>& out);

// "height", 100, 16 -> "--height 100: must be a positive multiple of 16 (...); 96 or 112 would work"
void check_multiple(const char* field, int value, int step, const std::string& why, std::vector<Problem>& out);

}  // namespace studio::plan
