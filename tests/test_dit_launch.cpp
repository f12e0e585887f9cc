// dit-launch as a user runs it: a real process, its exit status, its one-line errors and its files.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "tensor_support.h"
#include "video/clip_writer.h"

using namespace studio;

namespace {

struct Run {
  int exit_code = -1;
  QString err;
};

Run launch(const QStringList& args, int timeout_ms = 120000) {
  QProcess p;
  p.start(QString(STUDIO_BIN_DIR) + "/dit-launch", args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-2, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardError())};
}

// The reference run of a case as command-line flags.
QStringList golden_args(const std::string& name) {
  auto g = test::golden_json(name);
  const QString c = QString::fromStdString(test::golden_case(name)), file = c + "/golden.safetensors";
  QStringList a{"--model", c, "--height", QString::number(int(g["height"])), "--width", QString::number(int(g["width"])),
                "--num_frames", QString::number(int(g["num_frames"])), "--num_inference_steps",
                QString::number(int(g["num_inference_steps"])), "--guidance_scale",
                QString::number(double(g["guidance_scale"])), "--prompt_embeds", file, "--latents", file};
  if (g["use_dynamic_cfg"]) a << "--use_dynamic_cfg";
  if (g["scheduler"] == "CogVideoXDPMScheduler") a << "--sampler_noise" << file;
  return a;
}

}  // namespace

class TestDitLaunch : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString out(const char* name) { return tmp_.path() + "/" + name; }

  // The error is the last line of stderr; a refusal before any work (exit 2) is the only line.
  void expect_error(const QStringList& args, int code, std::initializer_list<const char*> parts) {
    Run r = launch(args);
    QVERIFY2(r.exit_code == code, qPrintable(QString("exit %1, stderr: %2").arg(r.exit_code).arg(r.err)));
    const QString last = r.err.trimmed().section('\n', -1);
    if (code == 2) QVERIFY2(r.err.trimmed().count('\n') == 0, qPrintable("expected one line, got: " + r.err));
    for (const char* p : parts) QVERIFY2(last.contains(p), qPrintable("'" + QString(p) + "' not in: " + last));
  }

 private Q_SLOTS:
  void reproduces_reference_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"}) QTest::newRow(n) << QString(n);
  }
  void reproduces_reference() {
    QFETCH(QString, name);
    const QString file = out(qPrintable(name + ".safetensors"));
    Run r = launch(golden_args(name.toStdString()) << "--save_tensors" << file);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(r.err.contains("step 1/"));
    io::TensorFile f(file.toStdString(), "test");
    const double err = test::max_abs_diff(f.get("final_latents", 5, ""), test::golden_tensor(name.toStdString(), "final_latents"));
    const double verr = test::max_abs_diff(f.get("video", 5, ""), test::golden_tensor(name.toStdString(), "video"));
    qInfo("%s through dit-launch: final_latents max error %.3g, video %.3g", qPrintable(name), err, verr);
    QVERIFY(err < 1e-3);
    QVERIFY(verr < 1e-3);
  }

  void words_to_video_reproduce_reference() {
    // cogvx2b_t5_tiny: the whole pipeline from words, with a sharded text encoder.
    const std::string n = "cogvx2b_t5_tiny";
    auto g = test::golden_json(n);
    const QString c = QString::fromStdString(test::golden_case(n));
    const QString file = out("t5.safetensors");
    Run r = launch({"--model", c, "--prompt", QString::fromStdString(g["prompt"]), "--max_sequence_length",
                    QString::number(int(g["max_sequence_length"])), "--height", "64", "--width", "96", "--num_frames",
                    "9", "--num_inference_steps", "4", "--guidance_scale", "6", "--latents", c + "/golden.safetensors",
                    "--save_tensors", file});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    io::TensorFile f(file.toStdString(), "test");
    QCOMPARE(test::max_abs_diff(f.get_int64("input_ids"), io::TensorFile(c.toStdString() + "/golden.safetensors", "g").get_int64("input_ids")), 0.0);
    QCOMPARE(test::max_abs_diff(f.get_int64("negative_input_ids"), io::TensorFile(c.toStdString() + "/golden.safetensors", "g").get_int64("negative_input_ids")), 0.0);
    const double pe = test::max_abs_diff(f.get("prompt_embeds", 3, ""), test::golden_tensor(n, "prompt_embeds"));
    const double ne = test::max_abs_diff(f.get("negative_prompt_embeds", 3, ""), test::golden_tensor(n, "negative_prompt_embeds"));
    const double fl = test::max_abs_diff(f.get("final_latents", 5, ""), test::golden_tensor(n, "final_latents"));
    const double vid = test::max_abs_diff(f.get("video", 5, ""), test::golden_tensor(n, "video"));
    qInfo("from words: prompt_embeds %.2g, negative %.2g, final_latents %.2g, video %.2g", pe, ne, fl, vid);
    QVERIFY(pe < 1e-4 && ne < 1e-4);
    QVERIFY(fl < 1e-3 && vid < 1e-3);
  }

  void seeded_runs_are_reproducible() {
    const std::string c = test::golden_case("cogvx5b_tiny");
    QStringList base{"--model", QString::fromStdString(c), "--num_inference_steps", "2", "--prompt_embeds",
                     QString::fromStdString(c + "/golden.safetensors")};
    QCOMPARE(launch(QStringList(base) << "--seed" << "7" << "--save_tensors" << out("s7a.safetensors")).exit_code, 0);
    QCOMPARE(launch(QStringList(base) << "--seed" << "7" << "--save_tensors" << out("s7b.safetensors")).exit_code, 0);
    QCOMPARE(launch(QStringList(base) << "--seed" << "8" << "--save_tensors" << out("s8.safetensors")).exit_code, 0);
    auto get = [&](const char* n) { return io::TensorFile(out(n).toStdString(), "t").get("final_latents", 5, ""); };
    QCOMPARE(test::max_abs_diff(get("s7a.safetensors"), get("s7b.safetensors")), 0.0);
    QVERIFY(test::max_abs_diff(get("s7a.safetensors"), get("s8.safetensors")) > 1e-2);
  }

  void help_and_version() {
    QProcess p;
    p.start(QString(STUDIO_BIN_DIR) + "/dit-launch", {"--help"});
    QVERIFY(p.waitForFinished());
    QCOMPARE(p.exitCode(), 0);
    const QString help = p.readAllStandardOutput();
    for (const char* flag : {"--model", "--num_inference_steps", "--guidance_scale", "--use_dynamic_cfg", "--save_tensors"})
      QVERIFY(help.contains(flag));
  }

  void bad_arguments_exit_2_with_one_line() {
    const QString c = QString::fromStdString(test::golden_case("cogvx2b_tiny"));
    expect_error({"--model", c, "--bogus"}, 2, {"unknown option '--bogus'", "--help"});
    expect_error({"--model", c, "--height", "abc"}, 2, {"--height 'abc'", "not an integer", "480"});
    expect_error({"--model", c, "--height"}, 2, {"--height needs a value"});
    expect_error({"--model", c, "--guidance_scale", "x"}, 2, {"--guidance_scale 'x'", "not a number"});
    expect_error({"--model", c, "--height", "500"}, 2, {"--height 500", "multiple of 16", "496 or 512"});
    expect_error({"--model", c, "--num_frames", "10"}, 2, {"--num_frames 10", "4k+1", "9 or 13"});
    expect_error({"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--output", out("clip.avi")}, 2,
                 {"--output", "clip.avi", "'.avi'", ".mp4"});
    expect_error({"--model", c, "--prompt", "a cat"}, 2,
                 {"--prompt", "no tokenizer/ folder", "huggingface-cli download", "--prompt_embeds"});
    expect_error({"--model", c, "--prompt", "a cat", "--prompt_embeds", c + "/golden.safetensors"}, 2,
                 {"--prompt and --prompt_embeds both given"});
    expect_error({"--prompt", "a cat", "--max_sequence_length", "8"}, 2,
                 {"--max_sequence_length 8", "needs exactly", "16"});
    expect_error({"--model", c, "--fps", "0"}, 2, {"--fps 0", "out of range"});
    expect_error({"--model", c, "--device", "tpu", "--prompt_embeds", c + "/golden.safetensors"}, 3, {"--device 'tpu'", "cpu"});
  }

  void bad_inputs_exit_3_naming_file_and_tensor() {
    const QString c = QString::fromStdString(test::golden_case("cogvx2b_tiny"));
    const QString g = c + "/golden.safetensors";
    expect_error({"--model", "/nonexistent"}, 3, {"--model /nonexistent", "not a folder"});
    expect_error({"--model", c}, 2, {"no prompt", "--prompt TEXT", "--prompt_embeds FILE"});
    expect_error({"--model", c, "--prompt_embeds", "/nonexistent.safetensors"}, 3,
                 {"--prompt_embeds", "/nonexistent.safetensors", "file not found"});
    expect_error({"--model", c, "--prompt_embeds", g, "--latents", c + "/vae/diffusion_pytorch_model.safetensors"}, 3,
                 {"--latents", "no tensor 'latents_init'", "the file holds"});
    expect_error({"--model", c, "--prompt_embeds", g, "--latents", g, "--height", "128"}, 3,
                 {"latents_init has shape [1, 3, 4, 8, 12]", "--height 128", "need [1, 3, 4, 16, 12]"});
    // The 5B case's embeddings have the right width but this file lacks a DPM noise tensor.
    const QString c5 = QString::fromStdString(test::golden_case("cogvx5b_tiny"));
    expect_error({"--model", c5, "--prompt_embeds", c5 + "/golden.safetensors", "--sampler_noise", g}, 3,
                 {"--sampler_noise", "no tensor 'scheduler_noise'"});
  }

  void demo_model_writes_a_playable_clip() {
    // No --model: the built-in demo model and its own embeddings, as README's run command does.
    Run r = launch({"--prompt", "A paper boat on a pond", "--num_inference_steps", "3", "--seed", "5", "--output",
                    out("demo.mp4")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(r.err.contains("built-in demo model"));
    auto probe = video::probe_clip(out("demo.mp4").toStdString());
    QCOMPARE(probe.frames, 25);
    QCOMPARE(probe.width, 288);
    QCOMPARE(probe.height, 192);
    QCOMPARE(probe.codec, std::string("h264"));
    QVERIFY(std::abs(probe.duration_s - 25.0 / 8) < 0.01);
    QCOMPARE(probe.metadata["seed"], std::string("5"));
    QCOMPARE(probe.metadata["num_inference_steps"], std::string("3"));
    QCOMPARE(probe.metadata["prompt"], std::string("A paper boat on a pond"));
    QVERIFY(std::filesystem::exists(out("demo.mp4.json").toStdString()));
  }

  // Runs dit-launch in a private mount namespace over a fresh tmpfs mounted with `options`; prints what
  // is left in the mount after the run. Returns false where namespaces are not allowed.
  bool launch_on_tmpfs(const QString& options, const QStringList& args, Run& r, QString& left) {
    QProcess probe;
    probe.start("unshare", {"-m", "true"});
    if (!probe.waitForFinished() || probe.exitCode() != 0) return false;
    const QString dir = out("mnt");
    std::filesystem::create_directories(dir.toStdString());
    QString cmd = "mount -t tmpfs -o " + options + " tmpfs " + dir + " || exit 99; \"" + QString(STUDIO_BIN_DIR) +
                  "/dit-launch\" \"$@\"; rc=$?; echo LEFT:$(ls -A " + dir + "); exit $rc";
    QProcess p;
    p.start("unshare", QStringList{"-m", "sh", "-c", cmd, "sh"} + args);
    p.waitForFinished(120000);
    const QString stdout_text = QString::fromUtf8(p.readAllStandardOutput());
    r = {p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
    left = stdout_text.section("LEFT:", 1).trimmed();
    return p.exitCode() != 99;
  }

  void full_disk_during_export_leaves_nothing() {
    Run r;
    QString left;
    const QString clip = out("mnt") + "/clip.mp4";
    if (!launch_on_tmpfs("size=64k", {"--prompt", "a boat", "--num_inference_steps", "2", "--output", clip}, r, left))
      QSKIP("cannot mount a tmpfs in a private namespace here (needs root or user namespaces)");
    QVERIFY2(r.exit_code == 3, qPrintable(r.err));
    QVERIFY2(r.err.contains("clip.mp4") && r.err.contains("No space left on device"), qPrintable(r.err));
    QVERIFY2(left.isEmpty(), qPrintable("left behind: " + left));
  }

  void read_only_folder_is_refused_before_any_work() {
    Run r;
    QString left;
    if (!launch_on_tmpfs("ro", {"--prompt", "a boat", "--output", out("mnt") + "/clip.mp4"}, r, left))
      QSKIP("cannot mount a tmpfs in a private namespace here (needs root or user namespaces)");
    QVERIFY2(r.exit_code == 2, qPrintable(r.err));
    QVERIFY2(r.err.contains("is not writable"), qPrintable(r.err));
    QVERIFY(!r.err.contains("step 1/"));
  }

  void unwritable_output_is_refused_before_any_work() {
    expect_error({"--prompt", "a boat", "--output", out("nowhere/clip.mp4")}, 2, {"--output", "nowhere", "does not exist"});
    QStringList a = golden_args("cogvx2b_tiny");
    expect_error(a << "--save_tensors" << out("missing/dir/x.safetensors"), 2,
                 {"--save_tensors", "missing/dir", "does not exist"});
    QVERIFY(!std::filesystem::exists(out("missing").toStdString()));
  }

  void sigterm_cancels_within_a_step_and_writes_nothing() {
    const QString c = QString::fromStdString(test::golden_case("cogvx2b_tiny"));
    QProcess p;
    // A larger grid than the reference's, so that 1000 steps take far longer than the test waits.
    p.start(QString(STUDIO_BIN_DIR) + "/dit-launch",
            {"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--num_inference_steps", "1000",
             "--height", "256", "--width", "384", "--save_tensors", out("cancelled.safetensors")});
    QVERIFY(p.waitForStarted());
    QString err;
    while (!err.contains("step 2/1000") && p.state() == QProcess::Running) {
      p.waitForReadyRead(5000);
      err += p.readAllStandardError();
    }
    QCOMPARE(p.state(), QProcess::Running);
    p.terminate();  // SIGTERM
    QVERIFY(p.waitForFinished(10000));
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 130);
    QVERIFY2(err.contains("cancelled; nothing was written"), qPrintable(err));
    QVERIFY(!err.contains("step 1000/1000"));
    QVERIFY(!std::filesystem::exists(out("cancelled.safetensors").toStdString()));
  }
};

QTEST_GUILESS_MAIN(TestDitLaunch)
#include "test_dit_launch.moc"
