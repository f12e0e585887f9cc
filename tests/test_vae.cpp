// The CogVideoX VAE decoder against the reference: every case's `video` from `vae_input`, to 1e-3.
#include <QtTest>

#include <ATen/ops/isfinite.h>

#include "models/cogvideox_vae.h"
#include "plan/model_folder.h"
#include "tensor_support.h"

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
