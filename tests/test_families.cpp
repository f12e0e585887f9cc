// The family registry, walked row by row: every family that plan/families/registry.cpp lists reads its
// reference cases, has rules and presets that accept its own defaults, a runtime in models/ and parts that
// load. A family added without one of its rows, or without a reference case here, fails this suite
// (docs/adding-a-family.md).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <ATen/ops/randn.h>

#include "models/family_runtime.h"
#include "plan/families/registry.h"
#include "plan/job.h"
#include "support.h"

using namespace studio;

namespace {

// Each family's reference cases in ../shared/goldens: one folder per variant it reads.
const std::map<std::string, std::vector<std::string>>& reference_cases() {
  static const std::map<std::string, std::vector<std::string>> cases = {
      {"CogVideoX", {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"}},
      {"FLUX.1", {"flux_tiny", "flux_words_tiny"}},
      {"Wan", {"wan21_tiny", "wan22_tiny"}},
      {"HunyuanVideo-1.5", {"hunyuan15_tiny"}},
  };
  return cases;
}

// The job the family's defaults make for a folder, with words or, where the folder has no encoders, embeddings.
plan::JobSpec default_job(const plan::ModelFolder& m) {
  plan::JobSpec job;
  if (m.can_encode_words()) job.prompt = "a paper boat on a pond";
  else job.prompt_embeds_file = "embeds.safetensors";
  plan::apply_model_defaults(job, m);
  return job;
}

std::string messages(const std::vector<plan::Problem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.field + ": " + p.message + "\n";
  return out;
}

std::vector<std::pair<const plan::Family*, std::string>> every_case() {
  std::vector<std::pair<const plan::Family*, std::string>> out;
  for (const plan::Family* f : plan::families()) {
    const auto it = reference_cases().find(f->name());
    if (it == reference_cases().end()) continue;  // family_has_reference_cases names it
    for (const auto& name : it->second) out.push_back({f, name});
  }
  return out;
}

TEST(FamilyRegistry, every_family_has_reference_cases_and_names_its_pipelines) {
  std::set<std::string> names;
  for (const plan::Family* f : plan::families()) {
    EXPECT_TRUE(names.insert(f->name()).second) << "two families are named " << f->name();
    EXPECT_TRUE(reference_cases().count(f->name()))
        << f->name() << " has no reference case in tests/test_families.cpp (docs/adding-a-family.md)";
    ASSERT_FALSE(f->pipelines().empty()) << f->name();
    for (const auto& p : f->pipelines()) {
      EXPECT_EQ(plan::family_reading(p), f) << p;
      EXPECT_EQ(plan::family_named_by(p), f) << p << " does not start with " << f->class_prefix();
    }
    EXPECT_FALSE(f->known_repos().empty()) << f->name() << " offers no repository in the Models view";
  }
  EXPECT_EQ(plan::family_reading("StableDiffusionPipeline"), nullptr);
}

TEST(FamilyRegistry, every_reference_case_is_read_as_its_family_and_a_known_variant) {
  for (const auto& [family, name] : every_case()) {
    SCOPED_TRACE(name);
    const auto m = plan::read_model_folder(test::golden_case(name));
    EXPECT_EQ(m.family, family);
    EXPECT_FALSE(m.variant.id.empty());
    EXPECT_FALSE(m.variant.name.empty());
    bool known = false;
    for (const auto& r : family->known_repos()) known = known || r.variant == m.variant.id;
    EXPECT_TRUE(known) << m.variant.id << " has no row in " << family->name() << "'s known_repos()";
    EXPECT_FALSE(plan::example_repo(m).empty());
  }
}

// The image-to-video reference cases read as variants the Models view offers, marked as taking a picture,
// and those are what a picture given to the family's text-to-video models is pointed to.
TEST(FamilyRegistry, image_to_video_variants_are_offered_for_a_picture) {
  for (const char* name : {"cogvx5b_i2v_tiny", "cogvx15_i2v_tiny", "wan21_i2v_tiny", "wan22_i2v_tiny"}) {
    SCOPED_TRACE(name);
    const auto m = plan::read_model_folder(test::golden_case(name));
    ASSERT_TRUE(plan::rules_of(m).takes_image(m));
    bool offered = false;
    for (const auto& r : plan::image_to_video_repos(plan::rules_of(m))) offered = offered || r.variant == m.variant.id;
    EXPECT_TRUE(offered) << m.variant.id << " has no image-to-video row in " << m.family->name() << "'s known_repos()";
  }
  for (const auto& [family, name] : every_case())  // the text-to-video ones are not marked
    for (const auto& r : plan::image_to_video_repos(*family))
      EXPECT_NE(r.variant, plan::read_model_folder(test::golden_case(name)).variant.id) << name;
}

TEST(FamilyRegistry, every_family_accepts_its_own_defaults_and_presets) {
  for (const auto& [family, name] : every_case()) {
    SCOPED_TRACE(name);
    const auto m = plan::read_model_folder(test::golden_case(name));
    const auto job = default_job(m);
    EXPECT_TRUE(plan::validate(job, m).empty()) << messages(plan::validate(job, m));
    EXPECT_GT(family->pixel_step(m), 0);
    EXPECT_GT(family->blocks(m), 0);
    EXPECT_GT(family->attention_heads(m), 0);
    EXPECT_GE(family->train_steps(m), job.num_inference_steps);
    // TeaCache's published polynomial, or none, and then the family refuses TeaCache.
    if (const auto c = family->teacache_coefficients(m); !c.empty()) {
      EXPECT_EQ(c.size(), 5u);
    } else {
      auto cached = job;
      cached.use_teacache = true;
      EXPECT_FALSE(plan::validate(cached, m).empty());
    }
    EXPECT_FALSE(family->sampler_name(m).empty());
    const auto g = plan::latent_geometry(job, m);
    EXPECT_GT(g.latent_tokens, 0);
    EXPECT_EQ(g.text_tokens, job.max_sequence_length);
    for (const auto& size : family->size_presets(m)) {
      auto sized = job;
      sized.width = size.width;
      sized.height = size.height;
      EXPECT_TRUE(plan::validate(sized, m).empty()) << size.label << ": " << messages(plan::validate(sized, m));
    }
    // Every text an encoder reads is a field of the job, and the prompt is one of them.
    bool reads_prompt = false;
    for (const auto& in : family->encoder_inputs(job)) {
      EXPECT_NO_THROW(plan::job_text(job, in.field)) << in.field;
      reads_prompt = reads_prompt || in.field == "prompt";
    }
    EXPECT_TRUE(reads_prompt);
  }
}

TEST(FamilyRegistry, every_family_has_one_runtime) {
  std::set<const plan::Family*> seen;
  for (const models::FamilyRuntime* r : models::runtimes()) EXPECT_TRUE(seen.insert(&r->family()).second);
  for (const plan::Family* f : plan::families())
    EXPECT_TRUE(seen.count(f)) << f->name() << " has no runtime in models/ (models/family_runtime.cpp)";
  EXPECT_EQ(seen.size(), plan::families().size());
}

// The parts a run loads, loaded from each reference case through the registry: its transformers (both
// experts of a two-expert model), its VAE, its sampler; its latents stored and read back unchanged; its
// preview colours, where published, one row per latent channel.
TEST(FamilyRegistry, every_reference_case_loads_its_parts) {
  for (const auto& [family, name] : every_case()) {
    SCOPED_TRACE(name);
    const auto m = plan::read_model_folder(test::golden_case(name));
    const auto job = default_job(m);
    EXPECT_NE(models::load_transformer(m, at::kFloat, at::kCPU), nullptr);
    if (family->second_expert_boundary(m) > 0)
      EXPECT_NE(models::load_transformer(m, at::kFloat, at::kCPU, {}, 1), nullptr);
    if (m.has_vae()) EXPECT_NE(models::load_vae(m, at::kFloat, at::kCPU), nullptr);
    const auto g = plan::latent_geometry(job, m);
    const auto sampler = models::make_sampler(m, job.num_inference_steps, g.latent_tokens);
    EXPECT_EQ(sampler->steps(), job.num_inference_steps);
    const auto latents = at::randn(g.shape(1));
    const auto stored = models::latents_to_file(m, latents);
    EXPECT_TRUE(models::latents_from_file(m, stored, g.height, g.width).equal(latents));
    const auto rgb = models::latent_rgb(m);
    if (rgb.factors.defined()) EXPECT_EQ(rgb.factors.sizes(), (std::vector<int64_t>{g.channels, 3}));
  }
}

}  // namespace
