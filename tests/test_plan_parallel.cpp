// engine/plan's parallel rules, each with its message and suggestions (no LibTorch, as the GUI uses them).
#include <QtTest>

#include "plan/parallel.h"
#include "support.h"

using namespace studio;

class TestPlanParallel : public QObject {
  Q_OBJECT
  plan::ModelFolder model_ = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));  // 4 heads, 2 layers
  plan::JobSpec job() {
    plan::JobSpec j;
    j.prompt_embeds_file = "embeds.safetensors";
    plan::apply_model_defaults(j, model_);
    return j;
  }
  static plan::ParallelConfig cfg(int u, int r, bool c = false, int dp = 1) {
    plan::ParallelConfig p;
    p.ulysses_degree = u;
    p.ring_degree = r;
    p.use_cfg_parallel = c;
    p.data_parallel_degree = dp;
    return p;
  }
  static bool has(const std::vector<plan::Problem>& ps, const std::string& field, std::initializer_list<const char*> parts) {
    for (const auto& p : ps) {
      if (p.field != field) continue;
      bool all = true;
      for (const char* s : parts) all = all && p.message.find(s) != std::string::npos;
      if (all) return true;
      qWarning("%s", p.message.c_str());
    }
    return false;
  }

 private Q_SLOTS:
  void rank_layout_is_xdits() {
    // data 2 x CFG 2 x ring 2 x Ulysses 2: Ulysses innermost on contiguous ranks.
    auto p = cfg(2, 2, true, 2);
    QCOMPARE(p.world_size(), 16);
    auto c = plan::coords_of(13, p);  // 13 = ((1*2 + 1)*2 + 1)*2 + 1
    QCOMPARE(c.data, 1);
    QCOMPARE(c.cfg, 1);
    QCOMPARE(c.ring, 0);
    QCOMPARE(c.ulysses, 1);
    QCOMPARE(plan::rank_of(c, p), 13);
    QCOMPARE(plan::group_of(13, plan::Dim::Ulysses, p), std::vector<int>({12, 13}));
    QCOMPARE(plan::group_of(13, plan::Dim::Ring, p), std::vector<int>({13, 15}));
    QCOMPARE(plan::group_of(13, plan::Dim::Sequence, p), std::vector<int>({12, 13, 14, 15}));
    QCOMPARE(plan::group_of(13, plan::Dim::Cfg, p), std::vector<int>({9, 13}));
    QCOMPARE(plan::group_of(13, plan::Dim::Data, p), std::vector<int>({5, 13}));
  }

  void product_must_match_processes_with_suggestions() {
    auto ps = plan::validate_parallel(cfg(2, 2), job(), model_, 2);
    QVERIFY(has(ps, "world_size", {"ring 2 x ulysses 2", "needs 4 processes, but 2 are available",
                                   "Valid for 2:", "--ulysses_degree 2"}));
    QVERIFY(plan::validate_parallel(cfg(2, 2), job(), model_, 4).empty());
  }

  void suggestions_are_valid_and_nearest_first() {
    auto near = cfg(2, 1);
    auto all = plan::valid_configs(job(), model_, 4, near);
    QVERIFY(!all.empty());
    for (const auto& p : all) {
      QCOMPARE(p.world_size(), 4);
      QVERIFY(plan::validate_parallel(p, job(), model_, 4).empty());
    }
    // 4 heads: Ulysses 4, ring 4, 2 x 2, CFG x 2 and data-parallel ones that fit the job.
    QCOMPARE(all.front().sp_degree() * all.front().cfg_degree(), 4);
  }

  void uneven_heads_are_fine_but_not_more_ranks_than_heads() {
    QVERIFY(plan::validate_parallel(cfg(3, 1), job(), model_, 3).empty());  // 4 heads over 3 ranks
    QVERIFY(has(plan::validate_parallel(cfg(8, 1), job(), model_, 8), "ulysses_degree",
                {"--ulysses_degree 8", "4 attention heads", "at most 4"}));
  }

  void cfg_parallel_needs_guidance() {
    auto j = job();
    j.guidance_scale = 1.0;
    QVERIFY(has(plan::validate_parallel(cfg(1, 1, true), j, model_, 2), "use_cfg_parallel", {"turns guidance off"}));
  }

  void data_parallel_needs_videos_to_split() {
    QVERIFY(has(plan::validate_parallel(cfg(1, 1, false, 2), job(), model_, 2), "data_parallel_degree",
                {"makes 1 video", "--num_videos_per_prompt"}));
    auto j = job();
    j.num_videos_per_prompt = 4;
    QVERIFY(plan::validate_parallel(cfg(1, 1, false, 2), j, model_, 2).empty());
  }

  void pipefusion_stages_patches_and_warmup() {
    plan::ParallelConfig p;
    p.pipefusion_parallel_degree = 2;
    p.num_pipeline_patch = 2;
    p.warmup_steps = 1;
    QVERIFY(plan::validate_parallel(p, job(), model_, 2).empty());
    p.pipefusion_parallel_degree = 3;  // 2 layers
    QVERIFY(has(plan::validate_parallel(p, job(), model_, 3), "pipefusion_parallel_degree", {"has 2 layers"}));
    p.pipefusion_parallel_degree = 2;
    p.num_pipeline_patch = 5;  // 64 pixels / 8 / 2 = 4 token rows
    QVERIFY(has(plan::validate_parallel(p, job(), model_, 2), "num_pipeline_patch", {"4 token rows", "at most 4"}));
    p.num_pipeline_patch = 2;
    p.warmup_steps = 0;
    QVERIFY(has(plan::validate_parallel(p, job(), model_, 2), "warmup_steps", {"must be 1 to 50"}));
    p.warmup_steps = 10;
    p.ulysses_degree = 2;
    QVERIFY(has(plan::validate_parallel(p, job(), model_, 4), "warmup_steps", {"synchronously", "--warmup_steps 50"}));
  }

  void memory_estimate_divides_and_is_checked() {
    // The real CogVideoX-2b shape: 30 layers of width 1920, 17,776 tokens.
    auto folder = model_;
    folder.transformer.num_attention_heads = 30;
    folder.transformer.attention_head_dim = 64;
    folder.transformer.num_layers = 30;
    folder.transformer.time_embed_dim = 512;
    folder.transformer.text_embed_dim = 4096;
    folder.transformer.max_text_seq_length = 226;
    plan::JobSpec j;
    j.prompt_embeds_file = "e.safetensors";
    j.height = 480, j.width = 720, j.num_frames = 49;
    plan::apply_model_defaults(j, folder);
    const auto one = plan::estimate_memory({}, j, folder, 2);
    // Weights alone: about 1.7 billion parameters in bf16.
    QVERIFY2(one.transformer_gib > 3 && one.transformer_gib < 12, qPrintable(QString::number(one.transformer_gib)));
    const auto four = plan::estimate_memory(cfg(4, 1), j, folder, 2);
    QVERIFY(four.transformer_gib < one.transformer_gib);
    QVERIFY(has(plan::validate_parallel({}, j, folder, 1, 2.0, 2), "memory",
                {"estimated at", "GiB per rank", "more than the 2.0 GiB", "ring/Ulysses"}));
    QVERIFY(plan::validate_parallel({}, j, folder, 1, 80.0, 2).empty());
  }

  void degrees_below_one() {
    QVERIFY(has(plan::validate_parallel(cfg(0, 1), job(), model_, 1), "ulysses_degree", {"must be 1 or more"}));
  }
};

QTEST_APPLESS_MAIN(TestPlanParallel)
#include "test_plan_parallel.moc"
