// The CogVideoX VAE decoder against the reference: every case's `video` from `vae_input`, to 1e-3, in
// one process and split by rows over 2, 3 and 4 ranks (threads over real Gloo sockets).
#include <QtTest>

#include <thread>

#include <ATen/ops/isfinite.h>

#include "models/cogvideox_vae.h"
#include "parallel/mesh.h"
#include "parallel/parallel_vae.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "tensor_support.h"
#include "workers/launch/supervisor.h"

using namespace studio;

class TestVae : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void decodes_reference_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny", "cogvx2b_t5_tiny"}) QTest::newRow(n) << QString(n);
  }
  void decodes_reference() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    auto folder = plan::read_model_folder(test::golden_case(n));
    auto vae = models::CogVideoXVae::load(folder.dir + "/vae", *folder.vae, at::kFloat, at::kCPU);
    auto z = test::golden_tensor(n, "vae_input");
    int batches = 0;
    int64_t streamed = 0;
    vae->decode_batches(z, [&](const at::Tensor& b) {
      ++batches;
      streamed += b.size(2);
    });
    auto video = vae->decode(z);
    auto ref = test::golden_tensor(n, "video");
    QCOMPARE(video.sizes().vec(), test::golden_json(n)["video_frames"].get<std::vector<int64_t>>());
    QCOMPARE(int64_t(vae->output_frames(int(z.size(2)))), ref.size(2));
    QCOMPARE(streamed, ref.size(2));
    QCOMPARE(batches, std::max(int(z.size(2)) / 2, 1));
    const double err = test::max_abs_diff(video, ref);
    qInfo("%s: video max error %.3g over %d batches", n.c_str(), err, batches);
    QVERIFY2(err < 1e-3, qPrintable(QString::number(err)));
  }

  void parallel_decode_equals_the_reference_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("ranks");
    for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny", "cogvx2b_t5_tiny"})
      for (int r : {2, 3, 4}) QTest::newRow((std::string(n) + "/" + std::to_string(r)).c_str()) << QString(n) << r;
  }
  void parallel_decode_equals_the_reference() {
    QFETCH(QString, name);
    QFETCH(int, ranks);
    const std::string n = name.toStdString();
    auto folder = plan::read_model_folder(test::golden_case(n));
    auto vae = models::CogVideoXVae::load(folder.dir + "/vae", *folder.vae, at::kFloat, at::kCPU);
    auto z = test::golden_tensor(n, "vae_input");
    auto ref = test::golden_tensor(n, "video");
    plan::ParallelConfig p;
    p.ulysses_degree = ranks;  // any layout: the decode uses the world group
    const int port = workers::free_loopback_port();
    std::vector<std::string> failure(static_cast<size_t>(ranks));
    at::Tensor video;
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        try {
          parallel::DistEnv env;
          env.rank = r;
          env.world_size = ranks;
          env.master_port = port;
          auto mesh = parallel::Mesh::create(p, env, at::kCPU, std::chrono::seconds(60));
          std::vector<at::Tensor> batches;
          parallel::decode_by_rows(*vae, mesh->world(), z, [&](const at::Tensor& b) { batches.push_back(b); });
          if (r == 0) video = at::cat(batches, 2);
          if (r != 0 && !batches.empty()) failure[size_t(r)] = "a rank other than 0 received frames";
        } catch (const std::exception& e) {
          failure[size_t(r)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (const auto& f : failure) QVERIFY2(f.empty(), f.c_str());
    QCOMPARE(video.sizes(), ref.sizes());
    const double err = test::max_abs_diff(video, ref);
    qInfo("%s on %d ranks: video max error %.3g (%lld latent rows)", n.c_str(), ranks, err, (long long)z.size(3));
    QVERIFY2(err < 1e-3, qPrintable(QString::number(err)));
  }

  void more_ranks_than_rows_is_refused() {
    auto folder = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
    auto vae = models::CogVideoXVae::load(folder.dir + "/vae", *folder.vae, at::kFloat, at::kCPU);
    auto z = test::golden_tensor("cogvx2b_tiny", "vae_input").narrow(3, 0, 1);
    plan::ParallelConfig p;
    p.ulysses_degree = 2;
    const int port = workers::free_loopback_port();
    std::vector<bool> refused(2, false);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        parallel::DistEnv env;
        env.rank = r;
        env.world_size = 2;
        env.master_port = port;
        auto mesh = parallel::Mesh::create(p, env, at::kCPU, std::chrono::seconds(60));
        refused[size_t(r)] = test::throws_with<studio::InputError>(
            [&] { parallel::decode_by_rows(*vae, mesh->world(), z, [](const at::Tensor&) {}); },
            {"2 ranks cannot share 1 latent rows (8 pixels); use at most 1 ranks"});
      });
    for (auto& t : threads) t.join();
    QVERIFY(refused[0] && refused[1]);
  }

  void frame_counts_follow_the_reference_batching() {
    auto folder = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
    auto vae = models::CogVideoXVae::load(folder.dir + "/vae", *folder.vae, at::kFloat, at::kCPU);
    QCOMPARE(vae->output_frames(13), 49);  // CogVideoX 1.0: 49 frames
    QCOMPARE(vae->output_frames(21), 81);  // CogVideoX 1.5: 81 frames
    QCOMPARE(vae->output_frames(3), 9);
    QCOMPARE(vae->output_frames(6), 24);
    QCOMPARE(vae->output_frames(1), 1);
  }
};

QTEST_APPLESS_MAIN(TestVae)
#include "test_vae.moc"
