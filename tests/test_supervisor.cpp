// The Supervisor driven directly, with real dit-worker ranks. Ranks that serve several jobs (dit-worker --serve,
// as the studio runs them), on flux_lora_tiny under Ulysses 2: the transformer loads once; a job that changes only
// LoRA strengths loads and encodes nothing and equals diffusers 0.35.2's run at those strengths; another LoRA file
// loads again; the ranks are the same processes throughout, and gone once the Supervisor is. A cancel that comes after
// the output was written leaves a finished run.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <ATen/ops/randn.h>

#include "io/weights/tensor_file.h"
#include "plan/job_file.h"
#include "workers/launch/supervisor.h"
#include "process.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "flux_lora_tiny";

std::string lora_file(const std::string& name) { return test::golden_case(kCase) + "/lora_" + name + ".safetensors"; }

// The job of these dit-launch flags, as dit-launch writes it for the ranks (defaults applied, checked).
plan::JobFile job_of(const test::TempDir& tmp, const test::Args& flags) {
  const std::string path = tmp.path("job.json");
  const auto r = test::run(test::bin("dit-launch"), flags + test::Args{"--write_job", path}, 120000);
  if (r.code != 0) throw std::runtime_error("dit-launch --write_job failed: " + r.err);
  return plan::job_file_from_json(test::read_file(path), path);
}

// The case's job from its words.
plan::JobFile case_job(const test::TempDir& tmp) {
  const auto g = test::golden_json(kCase);
  return job_of(tmp, {"--model", test::golden_case(g["model"]), "--prompt", g["prompt"], "--seed",
                      std::to_string(int(g["seed"])), "--height", std::to_string(int(g["height"])), "--width",
                      std::to_string(int(g["width"])), "--num_inference_steps",
                      std::to_string(int(g["num_inference_steps"])), "--guidance_scale",
                      std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
                      std::to_string(int(g["max_sequence_length"])), "--ulysses_degree", "2"});
}

// The case's job, writing its tensors to `out`, for ranks that serve several jobs or run one.
workers::LaunchPlan case_plan(const test::TempDir& tmp, const std::string& out, bool serve) {
  workers::LaunchPlan lp;
  lp.job = case_job(tmp);
  lp.job.job.save_tensors_file = tmp.path(out);
  lp.worker_exe = test::bin("dit-worker");
  lp.serve = serve;
  return lp;
}

// Polls until the job is over (at most four minutes).
void finish_job(workers::Supervisor& sup) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  while (sup.poll(100))
    if (std::chrono::steady_clock::now() > deadline) FAIL() << "the job did not end within four minutes";
}

at::Tensor final_latents(const std::string& file) {
  return io::TensorFile(file, "run").get("final_latents", -1, "").narrow(0, 0, 1);
}

double off_golden(const std::string& file, const std::string& variant) {
  const auto v = test::golden_json(kCase)["variants"][variant];
  return test::max_abs_diff(final_latents(file), test::golden_tensor(kCase, v["final_latents"]));
}

bool runs(int64_t pid) { return ::kill(pid_t(pid), 0) == 0; }

}  // namespace

TEST(Supervisor, a_strength_change_loads_nothing_and_equals_the_reference) {
  test::TempDir tmp;
  auto lp = case_plan(tmp, "first.safetensors", true);
  plan::JobFile job = lp.job;
  const auto with = [&](const std::string& loras, const std::string& out) {
    job.job.lora = loras;
    job.job.save_tensors_file = tmp.path(out);
    return job;
  };
  std::vector<std::string> lines;  // rank 0's log of the job at hand
  lp.job = with(lora_file("peft") + ":0.3," + lora_file("kohya") + ":1.5", "first.safetensors");
  workers::Supervisor sup(
      lp,
      [&](const events::Message& m) {
        if (m.kind == events::Kind::Log && events::rank_of(m) == 0) lines.push_back(m.body.value("text", ""));
      },
      {});
  sup.start();
  finish_job(sup);
  ASSERT_TRUE(sup.idle()) << sup.outcome().message;
  const auto pids = [&] {
    std::vector<int64_t> out;
    for (const auto& r : sup.ranks()) out.push_back(r.pid);
    return out;
  };
  const auto first_pids = pids();
  const auto said = [&](const std::string& what) {
    for (const auto& l : lines)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(said("kept from the last run"));
  EXPECT_TRUE(said("encoding with"));
  // At these strengths the run is not the reference's "both" (0.8 and 0.6): the strengths matter.
  EXPECT_GT(off_golden(tmp.path("first.safetensors"), "both"), 1e-2);

  // The same files at the reference's strengths: nothing loads, and the run is the reference's.
  lines.clear();
  sup.run_next(with(lora_file("peft") + ":0.8," + lora_file("kohya") + ":0.6", "second.safetensors"));
  finish_job(sup);
  ASSERT_TRUE(sup.idle()) << sup.outcome().message;
  EXPECT_TRUE(said("the transformer is kept from the last run; LoRA strengths " + lora_file("peft") + " 0.3 -> 0.8, " +
                   lora_file("kohya") + " 1.5 -> 0.6"));
  EXPECT_TRUE(said("the prompt embeddings are kept from the last run (the same texts and text encoders)"));
  EXPECT_FALSE(said("encoding with"));
  const double second = off_golden(tmp.path("second.safetensors"), "both");
  std::printf("strengths changed on the kept transformer: final latents %.3g from diffusers' run at them\n", second);
  EXPECT_LT(second, 1e-3);
  EXPECT_EQ(pids(), first_pids);

  // Another list of files loads the transformer again, with the new file's changes alone.
  lines.clear();
  sup.run_next(with(lora_file("peft") + ":1", "third.safetensors"));
  finish_job(sup);
  ASSERT_TRUE(sup.idle()) << sup.outcome().message;
  EXPECT_TRUE(said("loading the transformer again: the weights, their LoRA files or how they are held changed"));
  EXPECT_FALSE(said("the transformer is kept from the last run"));
  EXPECT_TRUE(said("the prompt embeddings are kept from the last run")) << "its LoRAs change no text encoder";
  EXPECT_LT(off_golden(tmp.path("third.safetensors"), "lora_peft"), 1e-3);
  EXPECT_EQ(pids(), first_pids);

  // Kept in fp8 (--quantize fp8), the LoRA stays beside the quantized layers: a strength change loads nothing.
  job.job.quantize = "fp8";
  for (const char* strength : {"1", "0.5"}) {
    lines.clear();
    sup.run_next(with(lora_file("peft") + ":" + strength, "fp8.safetensors"));
    finish_job(sup);
    ASSERT_TRUE(sup.idle()) << sup.outcome().message;
  }
  EXPECT_TRUE(said("the transformer is kept from the last run; LoRA strengths " + lora_file("peft") + " 1 -> 0.5"));
  job.job.quantize.clear();

  // A job for another parallel configuration is not theirs to take.
  plan::JobFile other = job;
  other.parallel.ulysses_degree = 1;
  other.parallel.ring_degree = 2;
  EXPECT_THROW(sup.run_next(other), std::logic_error);

  // A cancel ends them, as any failure does: the ranks no longer wait.
  sup.run_next(with(lora_file("peft") + ":0.5", "fourth.safetensors"));
  sup.cancel();
  finish_job(sup);
  EXPECT_FALSE(sup.idle());
  EXPECT_EQ(sup.outcome().exit_code, 130);
  for (const auto pid : first_pids) EXPECT_FALSE(runs(pid)) << "rank pid " << pid << " still runs after the cancel";
}

// The Supervisor's end is the ranks' end, even while they wait for a job.
TEST(Supervisor, waiting_ranks_end_with_their_supervisor) {
  test::TempDir tmp;
  const auto lp = case_plan(tmp, "only.safetensors", true);
  std::vector<int64_t> pids;
  {
    workers::Supervisor sup(lp, {}, {});
    sup.start();
    finish_job(sup);
    ASSERT_TRUE(sup.idle()) << sup.outcome().message;
    for (const auto& r : sup.ranks()) pids.push_back(r.pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (const auto pid : pids) EXPECT_TRUE(runs(pid)) << "rank pid " << pid << " did not wait";
  }
  for (const auto pid : pids) EXPECT_FALSE(runs(pid)) << "rank pid " << pid << " outlived its supervisor";
}

// A cancel that comes once rank 0 has reported its result (the user pressed Stop as the file was finished): the
// run is done, not cancelled, and says why.
TEST(Supervisor, a_cancel_after_the_output_is_written_leaves_a_finished_run) {
  test::TempDir tmp;
  const auto lp = case_plan(tmp, "whole.safetensors", false);
  std::vector<std::string> notes;
  workers::Supervisor* self = nullptr;
  workers::Supervisor sup(
      lp,
      [&](const events::Message& m) {
        if (m.kind == events::Kind::Done && events::rank_of(m) == 0) self->cancel();
      },
      [&](const std::string& line) { notes.push_back(line); });
  self = &sup;
  sup.start();
  finish_job(sup);
  EXPECT_EQ(sup.outcome().exit_code, 0) << sup.outcome().message;
  EXPECT_TRUE(std::filesystem::exists(tmp.path("whole.safetensors")));
  EXPECT_NE(std::find(notes.begin(), notes.end(), "the cancel came after the output was written: it is complete"),
            notes.end());
}

// Ranks waiting for a job leave at a cancel, as they are asked, rather than being killed once the stop's grace is
// over (the ranks that finish first wait while rank 0 decodes: a Stop then reaches them waiting).
TEST(Supervisor, waiting_ranks_leave_at_a_cancel) {
  test::TempDir tmp;
  std::vector<std::string> notes;
  workers::Supervisor sup(case_plan(tmp, "only.safetensors", true), {},
                          [&](const std::string& line) { notes.push_back(line); });
  sup.start();
  finish_job(sup);
  ASSERT_TRUE(sup.idle()) << sup.outcome().message;
  sup.cancel();
  finish_job(sup);
  for (const auto& n : notes) EXPECT_FALSE(test::contains(n, "killing them")) << n;
  for (const auto& r : sup.ranks()) EXPECT_NE(r.phase, "killed") << "rank " << r.rank;
}

// Wan2.2's two experts are both kept, each with its own LoRAs (--lora, --lora_2), and a strength change of
// either loads nothing; a LoRA that also changes a bias (merged: a bias has no layer to sit beside) loads again
// when its strength changes. Each served run equals dit-launch's run of the same job, which merges the LoRAs
// (the same sums in another order).
TEST(Supervisor, both_experts_are_kept_and_a_bias_change_loads_again) {
  test::TempDir tmp;
  const test::Args flags{"--model", test::golden_case("wan22_tiny"), "--prompt", "a fox", "--height", "32",
                         "--width", "32", "--num_frames", "5", "--num_inference_steps", "4"};
  const std::string wan = test::golden_case("wan21_lora_tiny"), m = "transformer.blocks.0.attn1.to_q.";
  const std::string bias = tmp.path("bias.safetensors");
  io::save_tensors(bias, {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::randn({32, 4})},
                          {m + "diff_b", at::randn({32})}});
  // A served run of `lora` and `lora_2`, and rank 0's log of it; then the same job run afresh by dit-launch.
  std::vector<std::string> lines;
  plan::JobFile job = job_of(tmp, flags);
  workers::Supervisor* sup = nullptr;
  int served_runs = 0;
  const auto expect_as_fresh = [&](const std::string& lora, const std::string& lora_2) {
    const std::string out = tmp.path("served" + std::to_string(++served_runs) + ".safetensors");
    const std::string fresh = tmp.path("fresh" + std::to_string(served_runs) + ".safetensors");
    job.job.lora = lora, job.job.lora_2 = lora_2, job.job.save_tensors_file = out;
    lines.clear();
    sup->run_next(job);
    finish_job(*sup);
    ASSERT_TRUE(sup->idle()) << sup->outcome().message;
    const auto r = test::run(test::bin("dit-launch"),
                             flags + test::Args{"--lora", lora, "--lora_2", lora_2, "--save_tensors", fresh}, 120000);
    ASSERT_EQ(r.code, 0) << r.err;
    const double gap = test::max_abs_diff(final_latents(out), final_latents(fresh));
    std::printf("served run %d against a fresh one: final latents %.3g\n", served_runs, gap);
    EXPECT_LT(gap, 5e-5);  // float32 sums in another order; a wrong strength moves them by 1e-2
  };
  const auto said = [&](const std::string& what) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return test::contains(l, what); });
  };
  workers::LaunchPlan lp;
  lp.job = job;
  lp.job.job.save_tensors_file = tmp.path("first.safetensors");
  lp.worker_exe = test::bin("dit-worker");
  lp.serve = true;
  workers::Supervisor served(
      lp,
      [&](const events::Message& m) {
        if (m.kind == events::Kind::Log && events::rank_of(m) == 0) lines.push_back(m.body.value("text", ""));
      },
      {});
  sup = &served;
  served.start();
  finish_job(served);
  ASSERT_TRUE(served.idle()) << served.outcome().message;

  expect_as_fresh(wan + "/lora_peft.safetensors:0.5", wan + "/lora_comfy.safetensors:0.5");
  EXPECT_TRUE(said("loading the transformer again")) << "the first job had no LoRAs";
  expect_as_fresh(wan + "/lora_peft.safetensors:1.2", wan + "/lora_comfy.safetensors:0.8");
  EXPECT_TRUE(said("the transformer is kept from the last run; LoRA strengths " + wan +
                   "/lora_peft.safetensors 0.5 -> 1.2"));
  EXPECT_TRUE(said("the second expert is kept from the last run; LoRA strengths " + wan +
                   "/lora_comfy.safetensors 0.5 -> 0.8"));
  expect_as_fresh(bias + ":0.5", wan + "/lora_comfy.safetensors:0.8");
  expect_as_fresh(bias + ":1", wan + "/lora_comfy.safetensors:0.8");
  EXPECT_TRUE(said("loading the transformer again: --lora " + bias + " also changes weights that are not linear layers'"));
  EXPECT_TRUE(said("the second expert is kept from the last run"));
}
