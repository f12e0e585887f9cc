// FLUX.1 from words against the flux_words_tiny reference (diffusers 0.32.2's FluxPipeline run from the
// prompt on a complete folder): CLIP's byte-level BPE tokenizer and text model (the pooled vector), T5 from
// tokenizer_2/ and its sharded text_encoder_2/, and the whole job through dit-launch from the seed, in one
// process and in parallel mixes.
#include <sstream>

#include "plan/families/flux_config.h"
#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "plan/error.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "process.h"
#include "tensor_support.h"
#include "text/encode/clip_encoder.h"
#include "text/tokenize/clip_tokenizer.h"
#include "models/family_runtime.h"
#include "text/tokenize/t5_tokenizer.h"

using namespace studio;

namespace {

const std::string kCase = "flux_words_tiny";

std::string folder() { return test::golden_case(kCase); }
std::string prompt() { return test::golden_json(kCase)["prompt"]; }
at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

at::Tensor ids(const std::string& name) { return test::golden_ids(kCase, name); }

std::vector<int64_t> id_list(const std::string& name) {
  const auto t = ids(name).contiguous();
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

}  // namespace

TEST(ClipTokenizer, ids_match_the_reference) {
  const auto tok = text::ClipTokenizer::load(folder() + "/tokenizer");
  EXPECT_EQ(tok.model_max_length(), 77u);
  EXPECT_EQ(tok.bos_id(), 713);
  EXPECT_EQ(tok.eos_id(), 714);
  EXPECT_EQ(tok.encode(prompt()).ids, id_list("clip_input_ids"));
}

// What transformers 4.47.1's slow CLIPTokenizer (no ftfy) gives for this vocabulary, by
// `CLIPTokenizer.from_pretrained(folder + "/tokenizer")(text)["input_ids"]`: lower case, contractions,
// one digit per piece, runs of symbols, accents kept, whitespace of every kind, special tokens in the text.
TEST(ClipTokenizer, cleans_and_splits_text_as_transformers) {
  const auto tok = text::ClipTokenizer::load(folder() + "/tokenizer");
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {{"A paper boat drifts on a pond at sunrise", {320, 656, 707, 699, 515, 320, 654, 524, 612}},
      {"It's a DOG's life!!! 42 boats", {72, 339, 6, 338, 320, 67, 78, 326, 6, 338, 75, 72, 69, 324, 0, 0, 256, 275, 273, 523, 64, 536}},
      {"café  naïve\tÉCOLE\n", {66, 64, 69, 127, 358, 77, 64, 127, 107, 85, 324, 127, 102, 66, 665, 324}},
      {"a<|endoftext|>b", {320, 714, 321}},
      {"深圳 boat", {162, 115, 365, 161, 250, 367, 707}},
      {"Ünïcode — “quotes” & emoji 🚣 x²", {127, 120, 77, 127, 107, 66, 78, 67, 324, 158, 222, 498, 158, 222, 506, 80, 84, 78, 537, 338, 158, 222, 507, 261, 68, 542, 73, 328, 172, 253, 248, 352, 343, 126, 366}},
      {"they'll we've I'd ?'s", {512, 68, 344, 6, 75, 331, 86, 324, 6, 85, 324, 328, 6, 323, 30, 262, 338}},
      {"ΑΒΓ Привет", {138, 109, 138, 110, 138, 367, 140, 123, 141, 222, 140, 116, 140, 110, 140, 113, 141, 480}},
      {"  ", {}}};
  for (const auto& [text, ids] : cases) EXPECT_EQ(tok.tokenize(text), ids) << "text: " << text;
}

TEST(ClipTokenizer, truncates_to_77_with_the_end_token_last) {
  const auto tok = text::ClipTokenizer::load(folder() + "/tokenizer");
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += "paper boat ";
  const auto e = tok.encode(long_text);
  ASSERT_EQ(e.ids.size(), 77u);
  EXPECT_GT(e.untruncated, 75u);
  EXPECT_EQ(e.ids.front(), tok.bos_id());
  EXPECT_EQ(e.ids.back(), tok.eos_id());
  const auto empty = tok.encode("");
  EXPECT_EQ(empty.ids[0], tok.bos_id());
  EXPECT_EQ(empty.ids[1], tok.eos_id());
  EXPECT_EQ(empty.ids[76], tok.pad_id());
}

TEST(ClipTokenizer, a_folder_without_its_files_is_named) {
  try {
    text::ClipTokenizer::load(folder() + "/tokenizer_2");
    FAIL() << "a T5 folder was read as CLIP's";
  } catch (const InputError& e) {
    EXPECT_TRUE(test::contains(e.what(), "no vocab.json")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "--prompt_embeds")) << e.what();
  }
}

// tokenizer_2/ is a T5TokenizerFast folder; its spiece.model with the fast tokenizer's normalisation
// (legacy Metaspace, runs of spaces collapsed, trailing space stripped) gives these ids.
TEST(FluxT5Tokenizer, ids_match_the_reference) {
  const auto tok = text::T5Tokenizer::load(folder() + "/tokenizer_2");
  const int max_length = test::golden_json(kCase)["max_sequence_length"];
  EXPECT_EQ(tok.encode(prompt(), size_t(max_length)).ids, id_list("t5_input_ids"));
}

// What transformers 4.47.1's T5TokenizerFast gives from tokenizer_2/tokenizer.json (its slow T5Tokenizer
// with legacy = true agrees on each): spaces, accents, unknown scripts, special tokens in the text.
TEST(FluxT5Tokenizer, normalises_text_as_the_fast_tokenizer) {
  const auto tok = text::T5Tokenizer::load(folder() + "/tokenizer_2");
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"It's a DOG's life!!! 42 boats", {192, 8, 178, 4, 6, 3, 94, 56, 395, 178, 4, 84, 67, 10, 315, 315, 315, 3, 174, 149, 3, 36, 11, 54, 4, 1}},
      {"café  naïve\tÉCOLE\n", {77, 37, 143, 3, 14, 23, 322, 79, 3, 2, 173, 56, 119, 38, 1}},
      {"深圳 boat", {3, 2, 3, 36, 11, 54, 1}},
      {"a </s> b", {6, 1, 3, 36, 1}},
      {"<extra_id_5> x", {494, 3, 151, 1}},
      {" lead", {3, 62, 23, 15, 1}},
      {"trail  ", {3, 8, 29, 23, 158, 1}},
      {"x  y", {3, 151, 3, 30, 1}},
      {"  ", {1}}};
  for (const auto& [text, ids] : cases) {
    auto got = tok.tokenize(text);
    got.push_back(tok.eos_id());
    EXPECT_EQ(got, ids) << "text: " << text;
  }
}

TEST(ClipTextEncoder, pooled_output_matches_the_reference) {
  const auto model = plan::read_model_folder(folder());
  const auto& parts = model.parts_as<plan::FluxParts>();
  ASSERT_TRUE(parts.clip && parts.has_clip_tokenizer);
  auto encoder = text::ClipTextEncoder::load(folder() + "/text_encoder", *parts.clip, at::kFloat, at::kCPU);
  const auto out = encoder->forward(ids("clip_input_ids"));
  EXPECT_EQ(out.last_hidden_state.sizes(), (std::vector<int64_t>{1, 77, 32}));
  const double err = test::max_abs_diff(out.pooled, golden("pooled_prompt_embeds"));
  std::printf("CLIP pooled: %.3g\n", err);
  EXPECT_LT(err, 1e-4);
}

TEST(FluxPrompt, both_encoders_from_words) {
  const auto model = plan::read_model_folder(folder());
  plan::JobSpec job;
  job.prompt = prompt();
  job.max_sequence_length = test::golden_json(kCase)["max_sequence_length"];
  std::vector<std::string> log;
  const auto e = models::encode_prompts(model, job, at::kFloat, at::kCPU, [&](const std::string& l) { log.push_back(l); });
  EXPECT_FALSE(e.negative_prompt_embeds.defined());
  ASSERT_EQ(e.input_ids.size(), 2u);
  EXPECT_EQ(e.input_ids[0].first, "clip_input_ids");
  EXPECT_TRUE(at::equal(e.input_ids[0].second, ids("clip_input_ids")));
  EXPECT_EQ(e.input_ids[1].first, "t5_input_ids");
  EXPECT_TRUE(at::equal(e.input_ids[1].second, ids("t5_input_ids")));
  EXPECT_LT(test::max_abs_diff(e.pooled_prompt_embeds, golden("pooled_prompt_embeds")), 1e-4);
  EXPECT_LT(test::max_abs_diff(e.prompt_embeds, golden("prompt_embeds")), 1e-4);
  // The prompt is over 16 T5 tokens here: the user is told what was cut.
  bool told = false;
  for (const auto& l : log) told = told || test::contains(l, "only the first 15 are used");
  EXPECT_TRUE(told);

  // prompt_2 goes to T5 alone; CLIP still reads the prompt.
  job.prompt_2 = "a red kite";
  const auto two = models::encode_prompts(model, job, at::kFloat, at::kCPU, [](const std::string&) {});
  EXPECT_TRUE(at::equal(two.input_ids[0].second, ids("clip_input_ids")));
  EXPECT_FALSE(at::equal(two.input_ids[1].second, ids("t5_input_ids")));
  EXPECT_LT(test::max_abs_diff(two.pooled_prompt_embeds, golden("pooled_prompt_embeds")), 1e-4);
}

// The whole job as a user runs it: words and a seed, nothing precomputed. Ids, embeddings, every step's
// latents and the image against the reference.
class FluxWordsThroughDitLaunch : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

TEST_P(FluxWordsThroughDitLaunch, from_the_prompt_and_seed) {
  const auto g = test::golden_json(kCase);
  const std::string out = tmp_.path("run.safetensors");
  test::Args args{"--model", folder(), "--prompt", prompt(), "--seed", std::to_string(int(g["seed"])),
                  "--height", std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])),
                  "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
                  "--guidance_scale", std::to_string(double(g["guidance_scale"])),
                  "--max_sequence_length", std::to_string(int(g["max_sequence_length"])), "--save_tensors", out};
  std::istringstream flags(GetParam());
  for (std::string w; flags >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(out, "run");
  EXPECT_TRUE(at::equal(f.get_int64("clip_input_ids"), ids("clip_input_ids")));
  EXPECT_TRUE(at::equal(f.get_int64("t5_input_ids"), ids("t5_input_ids")));
  EXPECT_LT(test::max_abs_diff(f.get("pooled_prompt_embeds", 2, ""), golden("pooled_prompt_embeds")), 1e-4);
  EXPECT_LT(test::max_abs_diff(f.get("prompt_embeds", 3, ""), golden("prompt_embeds")), 1e-4);
  // With two images (data parallel), the first is the reference's: image i has its own seed, seed + i.
  const double latents = test::max_abs_diff(f.get("final_latents", 3, "").narrow(0, 0, 1), golden("final_latents"));
  const double image = test::max_abs_diff(f.get("image", 4, "").narrow(0, 0, 1), golden("image"));
  std::printf("dit-launch from words %s: final_latents %.3g, image %.3g\n", GetParam(), latents, image);
  EXPECT_LT(latents, 1e-3);
  EXPECT_LT(image, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Mixes, FluxWordsThroughDitLaunch,
                         ::testing::Values("", "--ulysses_degree 2 --use_parallel_vae", "--ring_degree 2",
                                           "--ulysses_degree 2 --ring_degree 2", "--ring_degree 3", "--ring_degree 4",
                                           "--pipefusion_parallel_degree 2 --num_pipeline_patch 3 --warmup_steps 4",
                                           "--pipefusion_parallel_degree 2 --ulysses_degree 2 --warmup_steps 4",
                                           "--data_parallel_degree 2 --num_images_per_prompt 2"),
                         test::flags_name);

TEST(FluxWordsRefusals, missing_encoders_and_misplaced_prompts_are_named) {
  test::TempDir tmp;
  const std::string copy = tmp.path("flux");
  test::copy_tree(folder(), copy);
  std::filesystem::remove_all(copy + "/tokenizer");
  auto refused = [&](const std::string& model, const test::Args& extra, std::initializer_list<const char*> parts) {
    const auto r = test::run(test::bin("dit-launch"), test::Args{"--model", model, "--height", "64", "--width", "96"} + extra,
                             60000);
    EXPECT_EQ(r.code, 2) << r.err;
    for (const char* p : parts) EXPECT_TRUE(test::contains(r.err, p)) << "missing '" << p << "' in: " << r.err;
  };
  refused(copy, {"--prompt", "a boat"}, {"--prompt", "no tokenizer/ (CLIP's vocab.json, merges.txt)",
                                         "black-forest-labs/FLUX.1-dev", "--prompt_embeds"});
  refused(folder(), {"--prompt_2", "a boat"}, {"--prompt_2 without --prompt"});
  refused(folder(), {"--prompt", "a boat", "--image", test::golden_case("wan21_i2v_tiny") + "/image.png"},
          {"--image", "generates from words alone", "its family has no image-to-video model"});
  refused(folder(), {"--prompt", "a boat", "--negative_prompt", "rain"}, {"--negative_prompt", "no negative prompt"});
  refused(folder(), {"--prompt", "a boat", "--max_sequence_length", "600"}, {"--max_sequence_length 600", "512"});
  const auto cog = test::run(test::bin("dit-launch"), {"--model", test::golden_case("cogvx2b_t5_tiny"), "--prompt", "a",
                                                       "--prompt_2", "b"}, 60000);
  EXPECT_EQ(cog.code, 2);
  EXPECT_TRUE(test::contains(cog.err, "--prompt_2: FLUX.1's second prompt")) << cog.err;
}
