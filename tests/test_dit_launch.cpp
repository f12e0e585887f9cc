// dit-launch as a user runs it: a real process, its exit status, its one-line errors and its files.
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <filesystem>
#include <thread>

#include "process.h"
#include "tensor_support.h"
#include "video/clip_writer.h"

using namespace studio;
using test::Args;

namespace {

const std::string kLaunch = test::bin("dit-launch");

test::Finished launch(const Args& args, int timeout_ms = 120000) { return test::run(kLaunch, args, timeout_ms); }

// The reference run of a case as command-line flags.
Args golden_args(const std::string& name) {
  auto g = test::golden_json(name);
  const std::string c = test::golden_case(name), file = c + "/golden.safetensors";
  Args a{"--model", c, "--height", std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])),
         "--num_frames", std::to_string(int(g["num_frames"])), "--num_inference_steps",
         std::to_string(int(g["num_inference_steps"])), "--guidance_scale", std::to_string(double(g["guidance_scale"])),
         "--prompt_embeds", file, "--latents", file};
  if (g["use_dynamic_cfg"]) a.push_back("--use_dynamic_cfg");
  if (g["scheduler"] == "CogVideoXDPMScheduler") a = a + Args{"--sampler_noise", file};
  return a;
}

class DitLaunch : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  std::string out(const std::string& name) { return tmp_.path(name); }

  // The error is the last line of stderr; a refusal before any work (exit 2) is the only line.
  void expect_error(const Args& args, int code, std::initializer_list<const char*> parts) {
    const auto r = launch(args);
    ASSERT_EQ(r.code, code) << "stderr: " << r.err;
    const std::string err = test::trimmed(r.err), last = err.substr(err.rfind('\n') + 1);  // npos + 1: all of it
    if (code == 2) {
      ASSERT_EQ(err.find('\n'), std::string::npos) << "expected one line, got: " << r.err;
    }
    for (const char* p : parts) ASSERT_TRUE(test::contains(last, p)) << "'" << p << "' not in: " << last;
  }

  // Runs dit-launch in a private mount namespace over a fresh tmpfs mounted with `options` at out("mnt");
  // `left` is what is in the mount after the run. False where namespaces are not allowed.
  bool launch_on_tmpfs(const std::string& options, const Args& args, test::Finished& r, std::string& left) {
    try {
      if (test::run("unshare", {"-m", "true"}, 30000).code != 0) return false;
    } catch (const std::system_error&) {
      return false;  // no unshare here
    }
    const std::string dir = out("mnt");
    std::filesystem::create_directories(dir);
    const std::string cmd = "mount -t tmpfs -o " + options + " tmpfs " + dir + " || exit 99; \"" + kLaunch +
                            "\" \"$@\"; rc=$?; echo LEFT:$(ls -A " + dir + "); exit $rc";
    r = test::run("unshare", Args{"-m", "sh", "-c", cmd, "sh"} + args, 120000);
    const size_t at = r.out.find("LEFT:");
    left = at == std::string::npos ? "" : test::trimmed(r.out.substr(at + 5));
    return r.code != 99;
  }
};

class ReproducesReference : public DitLaunch, public ::testing::WithParamInterface<std::string> {};

TEST_P(ReproducesReference, through_dit_launch) {
  const std::string name = GetParam(), file = out(name + ".safetensors");
  const auto r = launch(golden_args(name) + Args{"--save_tensors", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "step 1/"));
  io::TensorFile f(file, "test");
  const double err = test::max_abs_diff(f.get("final_latents", 5, ""), test::golden_tensor(name, "final_latents"));
  const double verr = test::max_abs_diff(f.get("video", 5, ""), test::golden_tensor(name, "video"));
  std::printf("%s through dit-launch: final_latents max error %.3g, video %.3g\n", name.c_str(), err, verr);
  EXPECT_LT(err, test::kRunTolerance);
  EXPECT_LT(verr, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, ReproducesReference, ::testing::Values("cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"),
                         [](const auto& info) { return info.param; });

TEST_F(DitLaunch, words_to_video_reproduce_reference) {
  // cogvx2b_t5_tiny: the whole pipeline from words, with a sharded text encoder.
  const std::string n = "cogvx2b_t5_tiny";
  auto g = test::golden_json(n);
  const std::string c = test::golden_case(n), file = out("t5.safetensors");
  const auto r = launch({"--model", c, "--prompt", g["prompt"].get<std::string>(), "--max_sequence_length",
                         std::to_string(int(g["max_sequence_length"])), "--height", "64", "--width", "96",
                         "--num_frames", "9", "--num_inference_steps", "4", "--guidance_scale", "6", "--latents",
                         c + "/golden.safetensors", "--save_tensors", file});
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(file, "test"), golden(c + "/golden.safetensors", "g");
  EXPECT_EQ(test::max_abs_diff(f.get_int64("input_ids"), golden.get_int64("input_ids")), 0.0);  // ids: exact
  EXPECT_EQ(test::max_abs_diff(f.get_int64("negative_input_ids"), golden.get_int64("negative_input_ids")), 0.0);
  const double pe = test::max_abs_diff(f.get("prompt_embeds", 3, ""), test::golden_tensor(n, "prompt_embeds"));
  const double ne =
      test::max_abs_diff(f.get("negative_prompt_embeds", 3, ""), test::golden_tensor(n, "negative_prompt_embeds"));
  const double fl = test::max_abs_diff(f.get("final_latents", 5, ""), test::golden_tensor(n, "final_latents"));
  const double vid = test::max_abs_diff(f.get("video", 5, ""), test::golden_tensor(n, "video"));
  std::printf("from words: prompt_embeds %.2g, negative %.2g, final_latents %.2g, video %.2g\n", pe, ne, fl, vid);
  EXPECT_LT(pe, test::kCallTolerance);
  EXPECT_LT(ne, test::kCallTolerance);
  EXPECT_LT(fl, test::kRunTolerance);
  EXPECT_LT(vid, test::kRunTolerance);
}

TEST_F(DitLaunch, seeded_runs_are_reproducible) {
  const std::string c = test::golden_case("cogvx5b_tiny");
  const Args base{"--model", c, "--num_inference_steps", "2", "--prompt_embeds", c + "/golden.safetensors"};
  ASSERT_EQ(launch(base + Args{"--seed", "7", "--save_tensors", out("s7a.safetensors")}).code, 0);
  ASSERT_EQ(launch(base + Args{"--seed", "7", "--save_tensors", out("s7b.safetensors")}).code, 0);
  ASSERT_EQ(launch(base + Args{"--seed", "8", "--save_tensors", out("s8.safetensors")}).code, 0);
  auto get = [&](const char* n) { return io::TensorFile(out(n), "t").get("final_latents", 5, ""); };
  // The same program, job and seed on the same machine: the same computation, to the bit.
  EXPECT_EQ(test::max_abs_diff(get("s7a.safetensors"), get("s7b.safetensors")), 0.0);
  EXPECT_GT(test::max_abs_diff(get("s7a.safetensors"), get("s8.safetensors")), 1e-2);
}

TEST_F(DitLaunch, help_and_version) {
  const auto r = test::run(kLaunch, {"--help"}, 30000);
  ASSERT_EQ(r.code, 0);
  for (const char* flag : {"--model", "--num_inference_steps", "--guidance_scale", "--use_dynamic_cfg", "--save_tensors"})
    EXPECT_TRUE(test::contains(r.out, flag)) << flag;
}

// The worker comes from --worker, else the first on $DIT_STUDIO_WORKER_PATH, else beside dit-launch: a
// worker of our own (a script that notes each start, then runs the real one) shows which ran.
TEST_F(DitLaunch, runs_the_worker_it_is_given_or_finds_on_the_path) {
  namespace fs = std::filesystem;
  const std::string archive = out("unpacked-worker"), note = out("started.txt");
  fs::create_directories(archive + "/bin");
  test::write_file(archive + "/bin/dit-worker",
                   "#!/bin/sh\necho \"$0 $*\" >> '" + note + "'\nexec '" + test::bin("dit-worker") + "' \"$@\"\n");
  fs::permissions(archive + "/bin/dit-worker", fs::perms::owner_all);
  const Args job{"--prompt", "a boat",       "--num_inference_steps", "1",    "--num_frames", "9",
                 "--height", "96", "--width", "144", "--output", out("clip.mp4")};
  auto started = [&] { return fs::exists(note) ? test::read_file(note) : std::string(); };

  auto r = launch(Args{"--worker", archive} + job);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(started(), archive + "/bin/dit-worker --job")) << started();
  fs::remove(note);
  r = test::run(kLaunch, job, 120000, {{"DIT_STUDIO_WORKER_PATH", out("nothing-here") + ":" + archive}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(started(), "--job")) << "the worker on DIT_STUDIO_WORKER_PATH did not run";
  fs::remove(note);
  r = launch(job);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(started(), "") << "with no --worker and no path, the worker beside dit-launch runs";
  expect_error({"--worker", out("nothing-here"), "--prompt", "x"}, 2,
               {"--worker", "nothing-here: no executable dit-worker there"});
}

TEST_F(DitLaunch, bad_arguments_exit_2_with_one_line) {
  const std::string c = test::golden_case("cogvx2b_tiny");
  expect_error({"--model", c, "--bogus"}, 2, {"unknown option '--bogus'", "--help"});
  expect_error({"--model", c, "--num_inference_step", "2"}, 2, {"did you mean --num_inference_steps?"});
  expect_error({"--model", c, "--height", "abc"}, 2, {"--height 'abc'", "not an integer", "480"});
  expect_error({"--model", c, "--height"}, 2, {"--height needs a value"});
  expect_error({"--model", c, "--guidance_scale", "x"}, 2, {"--guidance_scale 'x'", "not a number"});
  expect_error({"--model", c, "--height", "500"}, 2, {"--height 500", "multiple of 16", "496 or 512"});
  expect_error({"--model", c, "--num_frames", "10"}, 2, {"--num_frames 10", "4k+1", "9 or 13"});
  expect_error({"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--output", out("clip.avi")}, 2,
               {"--output", "clip.avi", "'.avi'", ".mp4"});
  expect_error({"--model", c, "--prompt", "a cat"}, 2,
               {"--prompt", "no tokenizer/ (T5's spiece.model)", "huggingface-cli download", "--prompt_embeds"});
  expect_error({"--model", c, "--prompt", "a cat", "--prompt_embeds", c + "/golden.safetensors"}, 2,
               {"--prompt and --prompt_embeds both given"});
  expect_error({"--prompt", "a cat", "--max_sequence_length", "8"}, 2, {"--max_sequence_length 8", "needs exactly", "16"});
  expect_error({"--model", c, "--fps", "0"}, 2, {"--fps 0", "out of range"});
  expect_error({"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--ring_degree", "2", "--nproc_per_node",
                "1"},
               2, {"--nproc_per_node 1 makes 1 ranks", "make 2", "--ring_degree"});
  expect_error({"--model", c, "--device", "tpu", "--prompt_embeds", c + "/golden.safetensors"}, 2,
               {"--device 'tpu'", "cpu"});
  expect_error({"--model", c, "--dtype", "float64", "--prompt_embeds", c + "/golden.safetensors"}, 2,
               {"--dtype 'float64'", "bfloat16"});
}

TEST_F(DitLaunch, bad_inputs_exit_3_naming_file_and_tensor) {
  const std::string c = test::golden_case("cogvx2b_tiny"), g = c + "/golden.safetensors";
  expect_error({"--model", "/nonexistent"}, 3, {"--model /nonexistent", "not a folder"});
  expect_error({"--model", c}, 2, {"no prompt", "--prompt TEXT", "--prompt_embeds FILE"});
  expect_error({"--model", c, "--prompt", " \n "}, 2, {"a prompt of only spaces", "--prompt TEXT"});
  expect_error({"--model", c, "--prompt_embeds", "/nonexistent.safetensors"}, 3,
               {"--prompt_embeds", "/nonexistent.safetensors", "file not found"});
  expect_error({"--model", c, "--prompt_embeds", g, "--latents", c + "/vae/diffusion_pytorch_model.safetensors"}, 3,
               {"--latents", "no tensor 'latents_init'", "the file holds"});
  expect_error({"--model", c, "--prompt_embeds", g, "--latents", g, "--height", "128"}, 3,
               {"latents_init has shape [1, 3, 4, 8, 12]", "--height 128", "need [1, 3, 4, 16, 12]"});
  // The 5B case's embeddings have the right width but this file lacks a DPM noise tensor.
  const std::string c5 = test::golden_case("cogvx5b_tiny");
  expect_error({"--model", c5, "--prompt_embeds", c5 + "/golden.safetensors", "--sampler_noise", g}, 3,
               {"--sampler_noise", "no tensor 'scheduler_noise'"});
}

// Hostile files, as a download from the internet could hold them: refused before any work, as bad input
// (exit 3) naming the file and what is wrong, never an internal error.
TEST_F(DitLaunch, hostile_files_are_bad_input) {
  auto raw = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    const uint64_t n = header.size();
    std::string bytes(reinterpret_cast<const char*>(&n), 8);
    test::write_file(out(name), bytes + header + std::string(data_bytes, '\0'));
    return out(name);
  };
  const std::string c = test::golden_case("cogvx2b_tiny");
  const auto wrap = raw("wrap.safetensors",
                        R"({"prompt_embeds":{"dtype":"F32","shape":[1,144115188075855872,32],"data_offsets":[0,0]}})", 0);
  expect_error({"--model", c, "--prompt_embeds", wrap}, 3, {"wrap.safetensors", "tensor 'prompt_embeds'", "more bytes"});
  // A model folder whose transformer weights share bytes, and one whose config would wrap a size.
  const std::string model = out("model");
  test::copy_tree(c, model);
  raw("model/transformer/diffusion_pytorch_model.safetensors",
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
  expect_error({"--model", model, "--prompt_embeds", c + "/golden.safetensors"}, 3,
               {"transformer/diffusion_pytorch_model.safetensors", "tensor 'b'", "overlaps tensor 'a'"});
  test::edit_json(model + "/transformer/config.json", [](nlohmann::json& j) { j["attention_head_dim"] = 1000000000; });
  expect_error({"--model", model, "--prompt_embeds", c + "/golden.safetensors"}, 3,
               {"transformer/config.json", "'attention_head_dim' = 1000000000 must be 1 to 1024"});
}

// A download cut short is named from the headers by the launcher (its flag leads the line), before any rank
// loads; an empty folder is told what a model folder is and where to get one.
TEST_F(DitLaunch, a_cut_short_weight_file_or_an_empty_folder_is_named_before_any_work) {
  const std::string c = test::golden_case("cogvx2b_tiny"), model = out("cut");
  test::copy_tree(c, model);
  const std::string file = model + "/vae/diffusion_pytorch_model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  expect_error({"--model", model, "--prompt_embeds", c + "/golden.safetensors"}, 3,
               {"--model", "cut: vae/diffusion_pytorch_model.safetensors: truncated: the file holds",
                "its header describes", "fetch or copy it again"});
  std::filesystem::create_directories(out("empty"));
  expect_error({"--model", out("empty"), "--prompt_embeds", c + "/golden.safetensors"}, 3,
               {"no model_index.json", "not a model folder", "Models tab", "dit-models download"});
}

TEST_F(DitLaunch, demo_model_writes_a_playable_clip) {
  // No --model: the built-in demo model and its own embeddings, as README's run command does.
  const auto r = launch({"--prompt", "A paper boat on a pond", "--num_inference_steps", "3", "--seed", "5", "--output",
                         out("demo.mp4")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "built-in demo model"));
  // One rank on this machine: LibTorch's default, a thread per physical core (this process has not changed it).
  EXPECT_TRUE(test::contains(r.err, "CPU threads per rank: " + std::to_string(at::get_num_threads()) + " ("))
      << r.err;
  auto probe = video::probe_clip(out("demo.mp4"));
  EXPECT_EQ(probe.frames, 25);
  EXPECT_EQ(probe.width, 288);
  EXPECT_EQ(probe.height, 192);
  EXPECT_EQ(probe.codec, std::string("h264"));
  EXPECT_LT(std::abs(probe.duration_s - 25.0 / 8), 0.01);
  EXPECT_EQ(probe.metadata["seed"], std::string("5"));
  EXPECT_EQ(probe.metadata["num_inference_steps"], std::string("3"));
  EXPECT_EQ(probe.metadata["prompt"], std::string("A paper boat on a pond"));
  EXPECT_TRUE(std::filesystem::exists(out("demo.mp4.json")));
}

TEST_F(DitLaunch, full_disk_during_export_leaves_nothing) {
  test::Finished r;
  std::string left;
  if (!launch_on_tmpfs("size=64k", {"--prompt", "a boat", "--num_inference_steps", "2", "--output", out("mnt/clip.mp4")},
                       r, left))
    STUDIO_SKIP_WITHOUT_PRIVILEGE("cannot mount a tmpfs in a private namespace here (needs root or user namespaces)");
  ASSERT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::contains(r.err, "clip.mp4") && test::contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(left.empty()) << "left behind: " << left;
}

TEST_F(DitLaunch, read_only_folder_is_refused_before_any_work) {
  test::Finished r;
  std::string left;
  if (!launch_on_tmpfs("ro", {"--prompt", "a boat", "--output", out("mnt/clip.mp4")}, r, left))
    STUDIO_SKIP_WITHOUT_PRIVILEGE("cannot mount a tmpfs in a private namespace here (needs root or user namespaces)");
  ASSERT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(test::contains(r.err, "is on a read-only file system")) << r.err;
  EXPECT_FALSE(test::contains(r.err, "step 1/"));
}

TEST_F(DitLaunch, unwritable_output_is_refused_before_any_work) {
  expect_error({"--prompt", "a boat", "--output", out("nowhere/clip.mp4")}, 2, {"--output", "nowhere", "does not exist"});
  expect_error(golden_args("cogvx2b_tiny") + Args{"--save_tensors", out("missing/dir/x.safetensors")}, 2,
               {"--save_tensors", "missing/dir", "does not exist"});
  EXPECT_FALSE(std::filesystem::exists(out("missing")));
}

// What stands at an output's own path, or two outputs of one name, would fail a run only at its end (or, for
// --save_tensors and --output, let one replace the other): refused before any work.
TEST_F(DitLaunch, outputs_that_clash_are_refused_before_any_work) {
  std::filesystem::create_directories(out("frames"));
  test::write_file(out("frames/0001.png"), "x");
  test::write_file(out("plain"), "x");
  const Args run{"--prompt", "a boat", "--num_inference_steps", "1"};
  expect_error(run + Args{"--output", out("c.mp4"), "--save_tensors", out("c.mp4")}, 2,
               {"--save_tensors", "is also --output's file", "its own name"});
  // What the sidecar JSON beside a clip (or in a folder of frames) would replace.
  expect_error(run + Args{"--output", out("c.mp4"), "--magcache_calibrate", out("c.mp4.json")}, 2,
               {"--magcache_calibrate", "c.mp4.json is also --output's sidecar JSON"});
  std::filesystem::create_directories(out("new_frames"));  // empty: frames may go there
  expect_error(run + Args{"--output", out("new_frames/"), "--save_tensors", out("new_frames/clip.json")}, 2,
               {"--save_tensors", "is also --output's sidecar JSON"});
  expect_error(run + Args{"--output", out("frames")}, 2, {"--output", "frames: the folder exists and is not empty"});
  std::filesystem::create_directories(out("many_2"));  // the second of two videos' frames
  test::write_file(out("many_2/0001.png"), "x");
  expect_error(run + Args{"--num_videos_per_prompt", "2", "--output", out("many")}, 2,
               {"many_2: the folder exists and is not empty"});
  expect_error(run + Args{"--output", out("plain/")}, 2, {"plain/: a file of that name exists", ".mp4"});
  expect_error(run + Args{"--output", "/dev/null"}, 2, {"/dev/null: a device or a pipe"});
  expect_error(run + Args{"--save_tensors", out("frames")}, 2, {"--save_tensors", "a folder of that name exists"});
  expect_error(run + Args{"--events_log", out("nowhere/e.jsonl")}, 2, {"--events_log", "nowhere", "does not exist"});
  expect_error(run + Args{"--events_log", out("frames")}, 2, {"--events_log", "a folder of that name exists"});
  expect_error(run + Args{"--auto", "--ulysses_degree", "2"}, 2, {"--auto chooses", "ulysses 2", "drop --auto"});
  // A sidecar JSON whose place a folder holds, and the events log where an output goes.
  std::filesystem::create_directories(out("s.mp4.json"));
  expect_error(run + Args{"--output", out("s.mp4")}, 2, {"--output", "its sidecar JSON would go to", "a folder"});
  expect_error(run + Args{"--output", out("e.mp4"), "--events_log", out("e.mp4")}, 2,
               {"--events_log", "is also --output's file"});
  // A file the job reads is never written over: the weights, a LoRA, a picture, the tensors it starts from.
  test::write_file(out("weights.safetensors"), "the user's weights");
  test::write_file(out("style.safetensors"), "the user's LoRA");
  expect_error(run + Args{"--transformer", out("weights.safetensors"), "--save_tensors", out("weights.safetensors")},
               2, {"--save_tensors", "is --transformer's file, which the job reads", "another name"});
  expect_error(run + Args{"--lora", out("style.safetensors") + ":0.5", "--output", out("style.safetensors")}, 2,
               {"--output", "is --lora's file, which the job reads"});
  test::write_file(out("p.mp4.json"), "the user's picture");
  expect_error(run + Args{"--lora", out("p.mp4.json"), "--output", out("p.mp4")}, 2,
               {"--output's sidecar JSON", "p.mp4.json is --lora's file"});
  expect_error(run + Args{"--latents", out("plain"), "--events_log", out("plain")}, 2,
               {"--events_log", "is --latents's file"});
  EXPECT_EQ(test::read_file(out("weights.safetensors")), "the user's weights");
  EXPECT_EQ(test::read_file(out("style.safetensors")), "the user's LoRA");
  EXPECT_EQ(test::read_file(out("p.mp4.json")), "the user's picture");
  EXPECT_EQ(test::read_file(out("plain")), "x");
  EXPECT_FALSE(std::filesystem::exists(out("c.mp4")));
}

// Ctrl+C while the ranks measure the devices (they run in a process group of their own, out of the terminal's
// reach): the launcher ends them, not waiting for their measurement (a whole one, timed first, takes far longer),
// says it was cancelled, and none is left running.
TEST_F(DitLaunch, a_calibration_stopped_leaves_no_rank) {
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  const auto start = std::chrono::steady_clock::now();
  const auto whole = test::run(kLaunch, {"--calibrate", "--nproc_per_node", "2"}, 120000,
                               {{"XDG_CACHE_HOME", out("whole")}});
  ASSERT_EQ(whole.code, 0) << whole.err;
  const double measuring = since(start);
  test::Process p;
  p.start(kLaunch, {"--calibrate", "--nproc_per_node", "2"}, {{"XDG_CACHE_HOME", out("cache")}});
  std::vector<pid_t> ranks;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((ranks = test::children_of(p.pid())).size() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(ranks.size(), 2u) << "the two ranks never started: " << p.err();
  const auto stopped = std::chrono::steady_clock::now();
  p.signal(SIGINT);
  const auto r = test::finish(p, 30000);
  std::printf("a whole calibration: %.1f s; stopped in %.2f s\n", measuring, since(stopped));
  EXPECT_LT(since(stopped), measuring / 2);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_TRUE(test::contains(r.err, "cancelled")) << r.err;
  for (const pid_t rank : ranks) EXPECT_TRUE(::kill(rank, 0) != 0 && errno == ESRCH) << "rank pid " << rank << " is left";
  EXPECT_FALSE(std::filesystem::exists(out("cache/dit-studio"))) << "nothing measured is cached";
}

TEST_F(DitLaunch, sigterm_cancels_within_a_step_and_writes_nothing) {
  const std::string c = test::golden_case("cogvx2b_tiny");
  test::Process p;
  // A larger grid than the reference's, so that 1000 steps take far longer than the test waits.
  p.start(kLaunch, {"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--num_inference_steps", "1000",
                    "--height", "256", "--width", "384", "--save_tensors", out("cancelled.safetensors")});
  p.wait_for_stderr("step 2/1000");
  ASSERT_TRUE(p.running()) << p.err();
  // Within a step: after the last step read before the signal, only the one then running (and one
  // already in the pipe, unread) may finish. Counted in steps, not seconds, so that a loaded machine's
  // slower steps cannot change the verdict.
  const auto last_step = [](const std::string& err) {
    int last = 0;
    for (size_t at = err.find("step "); at != std::string::npos; at = err.find("step ", at + 1))
      if (int k = 0; std::sscanf(err.c_str() + at, "step %d/1000", &k) == 1) last = std::max(last, k);
    return last;
  };
  const int before = last_step(p.err());
  p.signal(SIGTERM);
  ASSERT_TRUE(p.wait_for_exit(120000)) << "still running 2 minutes after SIGTERM";
  EXPECT_EQ(p.exit_code(), 130);
  EXPECT_TRUE(test::contains(p.err(), "cancelled; nothing was written")) << p.err();
  EXPECT_LE(last_step(p.err()), before + 2) << p.err();
  EXPECT_FALSE(std::filesystem::exists(out("cancelled.safetensors")));
}

}  // namespace
