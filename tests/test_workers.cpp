// dit-launch and dit-worker as processes: the events of whole runs, and every way a rank can fail (killed,
// out of memory, hung, cancelled, bad input), the launcher itself killed, two jobs at once, and a job over
// TCP between two launchers (loopback, then two network namespaces). Every test checks that no process
// is left behind.
#include <QProcess>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include "io/safetensors_file.h"
#include "support.h"
#include "workers/events/messages.h"

using namespace studio;

namespace {

const QString kLaunch = QString(STUDIO_BIN_DIR) + "/dit-launch";
const QString kWorker = QString(STUDIO_BIN_DIR) + "/dit-worker";

// A short job on the built-in demo model: 9 frames, a few steps.
QStringList demo_job(int steps) {
  return {"--prompt", "a paper boat", "--num_frames", "9", "--num_inference_steps", QString::number(steps)};
}

std::vector<nlohmann::json> read_events(const QString& path) {
  std::vector<nlohmann::json> out;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return out;
  while (!f.atEnd()) out.push_back(nlohmann::json::parse(f.readLine().toStdString()));
  return out;
}

std::vector<nlohmann::json> of_kind(const std::vector<nlohmann::json>& all, const char* kind, int rank = -1) {
  std::vector<nlohmann::json> out;
  for (const auto& e : all)
    if (e["kind"] == kind && (rank < 0 || e["body"]["rank"] == rank)) out.push_back(e);
  return out;
}

std::vector<int64_t> pids_of(const std::vector<nlohmann::json>& all) {
  std::vector<int64_t> pids;
  for (const auto& h : of_kind(all, "hello")) pids.push_back(h["body"]["pid"].get<int64_t>());
  return pids;
}

// True once none of `pids` exists (waits up to `ms` for the kernel to finish with them).
bool all_gone(const std::vector<int64_t>& pids, int ms = 10000) {
  QElapsedTimer t;
  t.start();
  for (;;) {
    bool any = false;
    for (auto pid : pids) any |= ::kill(pid_t(pid), 0) == 0;
    if (!any) return true;
    if (t.elapsed() > ms) return false;
    QTest::qWait(50);
  }
}

// Reads the launcher's stderr until `needle` appears (or it exits / `ms` pass).
bool wait_for_text(QProcess& p, QString& err, const QString& needle, int ms = 120000) {
  QElapsedTimer t;
  t.start();
  p.waitForStarted();
  while (!err.contains(needle) && t.elapsed() < ms) {
    if (p.state() == QProcess::NotRunning) {
      err += p.readAllStandardError();
      return err.contains(needle);
    }
    p.waitForReadyRead(200);
    err += p.readAllStandardError();
  }
  return err.contains(needle);
}

struct Finished {
  int code = -1;
  QString err;
};

Finished finish(QProcess& p, QString err = {}, int ms = 120000) {
  if (!p.waitForFinished(ms)) {
    p.kill();
    p.waitForFinished();
    return {-2, err + p.readAllStandardError() + "\n(timed out)"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, err + p.readAllStandardError()};
}

}  // namespace

class TestWorkers : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString path(const QString& name) { return tmp_.path() + "/" + name; }

 private Q_SLOTS:
  void events_of_whole_runs_data() {
    QTest::addColumn<QStringList>("parallel");
    QTest::newRow("2 ranks: ulysses 2") << QStringList{"--ulysses_degree", "2"};
    QTest::newRow("4 ranks: cfg x ring 2") << QStringList{"--use_cfg_parallel", "--ring_degree", "2"};
  }
  void events_of_whole_runs() {
    QFETCH(QStringList, parallel);
    const int world = parallel.contains("--use_cfg_parallel") ? 4 : 2, steps = 3;
    const QString log = path(QString("events%1.jsonl").arg(world)), clip = path(QString("run%1.mp4").arg(world));
    // The launcher's private folder (job file, socket) goes under TMPDIR, and is gone when it is.
    const QString private_tmp = path(QString("tmp%1").arg(world));
    QVERIFY(QDir().mkpath(private_tmp));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("TMPDIR", private_tmp);
    p.setProcessEnvironment(env);
    p.start(kLaunch, demo_job(steps) + parallel + QStringList{"--output", clip, "--events_log", log});
    const auto r = finish(p);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QDir(private_tmp).isEmpty());
    const auto all = read_events(log);
    const auto pids = pids_of(all);
    QCOMPARE(int(pids.size()), world);
    for (int rank = 0; rank < world; ++rank) {
      const auto hello = of_kind(all, "hello", rank);
      QCOMPARE(hello.size(), size_t(1));
      QCOMPARE(hello[0]["body"]["device"], "cpu");
      QVERIFY(!hello[0]["body"].contains("token"));  // the secret goes no further than the check
      const auto progress = of_kind(all, "progress", rank);
      QCOMPARE(int(progress.size()), steps);
      for (int i = 0; i < steps; ++i) {
        const auto& b = progress[size_t(i)]["body"];
        QCOMPARE(b["step"].get<int>(), i + 1);
        QCOMPARE(b["total"].get<int>(), steps);
        QVERIFY(b["seconds"].get<double>() > 0);
        QVERIFY(b["host_rss"].get<uint64_t>() > 10u << 20);
        QVERIFY(b["host_peak"].get<uint64_t>() >= b["host_rss"].get<uint64_t>());
        QVERIFY(b["bytes_sent"].get<uint64_t>() > 0 && b["bytes_received"].get<uint64_t>() > 0);
      }
      QCOMPARE(of_kind(all, "done", rank).size(), size_t(1));
    }
    std::vector<std::string> phases;
    for (const auto& e : of_kind(all, "phase", 0)) phases.push_back(e["body"]["phase"]);
    QCOMPARE(phases, (std::vector<std::string>{"starting", "encoding", "loading", "denoising", "decoding", "writing"}));
    // A preview per step from rank 0 (the latent grid, 24 x 36), then the 9 decoded frames (192 x 288).
    const auto previews = of_kind(all, "preview");
    QCOMPARE(int(previews.size()), steps);
    QCOMPARE(previews[0]["payload_bytes"].get<int>(), 24 * 36 * 3);
    const auto frames = of_kind(all, "frame");
    QCOMPARE(frames.size(), size_t(9));
    for (int i = 0; i < 9; ++i) {
      QCOMPARE(frames[size_t(i)]["body"]["index"].get<int>(), i);
      QCOMPARE(frames[size_t(i)]["payload_bytes"].get<int>(), 192 * 288 * 3);
    }
    const auto done = of_kind(all, "done", 0)[0]["body"];
    QCOMPARE(done["outputs"][0].get<std::string>(), clip.toStdString());
    QVERIFY(QFileInfo(clip).size() > 1000);
    QVERIFY(all_gone(pids));
  }

  void a_killed_rank_is_named_with_its_last_lines() {
    const QString log = path("killed.jsonl");
    QProcess p;
    p.start(kLaunch, demo_job(1000) + QStringList{"--ring_degree", "2", "--events_log", log});
    QString err;
    QVERIFY2(wait_for_text(p, err, "[rank 1  denoising  step 2/1000"), qPrintable(err));
    const auto pids = pids_of(read_events(log));
    QCOMPARE(pids.size(), size_t(2));
    const int64_t victim = of_kind(read_events(log), "hello", 1)[0]["body"]["pid"];
    QElapsedTimer timer;
    timer.start();
    ::kill(pid_t(victim), SIGKILL);
    const auto r = finish(p, err, 30000);
    qInfo("the launcher returned %lld ms after the kill", timer.elapsed());
    QVERIFY(timer.elapsed() < 15000);
    QCOMPARE(r.code, 128 + SIGKILL);
    QVERIFY2(r.err.contains(QString("rank 1 (pid %1 on ").arg(victim)), qPrintable(r.err));
    QVERIFY2(r.err.contains("was killed by signal 9 (Killed); the other ranks were stopped"), qPrintable(r.err));
    QVERIFY2(r.err.contains("its last lines:"), qPrintable(r.err));
    QVERIFY(all_gone(pids));
  }

  void out_of_memory_on_one_rank_is_named() {
    qputenv("DIT_WORKER_MEMORY_LIMIT_MB", "1:1");
    QProcess p;
    p.start(kLaunch, demo_job(2) + QStringList{"--ulysses_degree", "2", "--events_log", path("oom.jsonl")});
    qunsetenv("DIT_WORKER_MEMORY_LIMIT_MB");
    const auto r = finish(p);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("rank 1 (pid") && r.err.contains("failed (out_of_memory): out of memory"), qPrintable(r.err));
    QVERIFY(all_gone(pids_of(read_events(path("oom.jsonl")))));
  }

  void out_of_memory_while_decoding_retries_in_tiles() {
    // Rank 0 may allocate 250 MB once denoising starts: enough to denoise and to decode 64 x 96-pixel
    // tiles, not to decode 192 x 288 frames whole.
    const QString out = path("retry.safetensors"), log = path("retry.jsonl");
    qputenv("DIT_WORKER_MEMORY_LIMIT_MB", "0:250");
    QProcess p;
    p.start(kLaunch, demo_job(2) + QStringList{"--tile_sample_min_height", "64", "--tile_sample_min_width", "96",
                                               "--save_tensors", out, "--events_log", log});
    qunsetenv("DIT_WORKER_MEMORY_LIMIT_MB");
    const auto r = finish(p);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("out of memory decoding at full size") &&
                 r.err.contains("decoding again in tiles of 64 x 96 pixels from the same latents"),
             qPrintable(r.err));
    const auto all = read_events(log);
    QCOMPARE(of_kind(all, "progress", 0).size(), size_t(2));  // denoised once
    int decoding = 0;
    for (const auto& e : of_kind(all, "phase", 0)) decoding += e["body"]["phase"] == "decoding";
    QCOMPARE(decoding, 2);
    const auto file = io::SafetensorsFile::open(out.toStdString());
    const auto* video = file->find("video");
    QVERIFY(video);
    QCOMPARE(video->shape, (std::vector<int64_t>{1, 3, 9, 192, 288}));
  }

  void a_hung_rank_is_found_by_its_silence() {
    const QString log = path("hung.jsonl");
    QProcess p;
    p.start(kLaunch, demo_job(1000) + QStringList{"--ulysses_degree", "2", "--heartbeat_timeout", "3", "--events_log", log});
    QString err;
    QVERIFY2(wait_for_text(p, err, "[rank 1  denoising  step 1/1000"), qPrintable(err));
    const auto pids = pids_of(read_events(log));
    const int64_t victim = of_kind(read_events(log), "hello", 1)[0]["body"]["pid"];
    QElapsedTimer timer;
    timer.start();
    ::kill(pid_t(victim), SIGSTOP);  // frozen: no step, no heartbeat, its peer waits in a collective
    const auto r = finish(p, err, 60000);
    qInfo("the launcher returned %lld ms after the rank froze", timer.elapsed());
    QVERIFY(timer.elapsed() < 20000);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QString("rank 1 (pid %1").arg(victim)) &&
                 r.err.contains("sent nothing for 3 s, not even a heartbeat: it hangs"),
             qPrintable(r.err));
    QVERIFY(all_gone(pids));
  }

  void cancel_stops_every_rank_and_keeps_only_what_was_asked_data() {
    QTest::addColumn<bool>("keep");
    QTest::newRow("nothing kept") << false;
    QTest::newRow("--keep_partial") << true;
  }
  void cancel_stops_every_rank_and_keeps_only_what_was_asked() {
    QFETCH(bool, keep);
    const QString log = path(QString("cancel%1.jsonl").arg(keep)), out = path(QString("cancel%1.safetensors").arg(keep));
    QStringList args = demo_job(1000) + QStringList{"--ulysses_degree", "2", "--save_tensors", out, "--events_log", log};
    if (keep) args << "--keep_partial";
    QProcess p;
    p.start(kLaunch, args);
    QString err;
    QVERIFY2(wait_for_text(p, err, "[rank 0  denoising  step 2/1000"), qPrintable(err));
    QElapsedTimer timer;
    timer.start();
    ::kill(pid_t(p.processId()), SIGINT);
    const auto r = finish(p, err, 30000);
    qInfo("cancelled in %lld ms", timer.elapsed());
    QCOMPARE(r.code, 130);
    QVERIFY2(r.err.contains("cancelled; every rank was stopped"), qPrintable(r.err));
    const auto all = read_events(log);
    // Every rank stopped at the same step boundary, by agreement, and said so.
    QCOMPARE(of_kind(all, "error").size(), size_t(2));
    for (const auto& e : of_kind(all, "error")) QCOMPARE(e["body"]["kind"], "cancelled");
    QCOMPARE(of_kind(all, "progress", 0).size(), of_kind(all, "progress", 1).size());
    QVERIFY(!QFile::exists(out));
    QCOMPARE(QFile::exists(out + ".partial.safetensors"), keep);
    QVERIFY(all_gone(pids_of(all)));
  }

  void bad_input_is_refused_clearly() {
    // Before anything starts: the plan.
    QProcess p;
    p.start(kLaunch, demo_job(2) + QStringList{"--pipefusion_parallel_degree", "3"});
    auto r = finish(p);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.trimmed().count('\n') == 0 && r.err.contains("--pipefusion_parallel_degree 3"), qPrintable(r.err));
    // A worker given a broken job file (as a hand-written torchrun job would be).
    const std::string bad = path("bad.json").toStdString();
    test::write_file(bad, "{\"model\": 7}");
    QProcess w;
    w.start(kWorker, {"--job", QString::fromStdString(bad)});
    r = finish(w);
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("bad.json: field 'model' has value 7 of the wrong type"), qPrintable(r.err));
    test::write_file(bad, std::string(2 << 20, ' '));
    w.start(kWorker, {"--job", QString::fromStdString(bad)});
    r = finish(w);
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("too large"), qPrintable(r.err));
    w.start(kWorker, {"--jobs"});
    r = finish(w);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("usage: dit-worker --job FILE | --list-devices"), qPrintable(r.err));
  }

  void list_devices_offers_the_cpu() {
    QProcess w;
    w.start(kWorker, {"--list-devices"});
    const auto r = finish(w);
    QCOMPARE(r.code, 0);
    const auto j = nlohmann::json::parse(w.readAllStandardOutput().toStdString());
    QVERIFY(j["gpus"].is_array());
    QVERIFY(j["cpu"]["cores"].get<int>() >= 1);
    QVERIFY(j["cpu"]["memory_bytes"].get<uint64_t>() > 1u << 30);
    if (j["gpus"].empty()) QVERIFY(j["note"].get<std::string>().find("jobs run on the CPU") != std::string::npos);
  }

  void two_jobs_at_once_do_not_collide() {
    QProcess a, b;
    a.start(kLaunch, demo_job(2) + QStringList{"--ulysses_degree", "2", "--save_tensors", path("a.safetensors")});
    b.start(kLaunch, demo_job(2) + QStringList{"--ring_degree", "2", "--save_tensors", path("b.safetensors")});
    const auto ra = finish(a), rb = finish(b);
    QVERIFY2(ra.code == 0, qPrintable(ra.err));
    QVERIFY2(rb.code == 0, qPrintable(rb.err));
  }

  void no_rank_outlives_a_killed_launcher() {
    const QString log = path("orphans.jsonl");
    QProcess p;
    p.start(kLaunch, demo_job(1000) + QStringList{"--ulysses_degree", "2", "--events_log", log});
    QString err;
    QVERIFY2(wait_for_text(p, err, "step 1/1000"), qPrintable(err));
    const auto pids = pids_of(read_events(log));
    QCOMPARE(pids.size(), size_t(2));
    ::kill(pid_t(p.processId()), SIGKILL);
    p.waitForFinished();
    QVERIFY2(all_gone(pids, 15000), "a rank outlived its launcher");
  }

  void a_second_machine_joins_with_the_token() {
    // Two launchers over TCP on loopback, as two machines would run them; a stranger without the token
    // is dropped and logged.
    const int port = 20000 + int(QCoreApplication::applicationPid() % 20000);
    const QStringList machine = demo_job(2) + QStringList{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr",
                                                          "127.0.0.1", "--master_port", QString::number(port)};
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("DIT_STUDIO_TOKEN", "0123456789abcdef0123456789abcdef");
    QProcess first, second;
    first.setProcessEnvironment(env);
    second.setProcessEnvironment(env);
    first.start(kLaunch, machine + QStringList{"--node_rank", "0", "--events_log", path("tcp.jsonl"), "--output",
                                               path("tcp.mp4")});
    QString err;
    QVERIFY2(wait_for_text(first, err, "starting 1 ranks on machine 0 of 2"), qPrintable(err));
    QTcpSocket stranger;
    for (int i = 0; i < 100 && stranger.state() != QAbstractSocket::ConnectedState; ++i) {
      stranger.connectToHost("127.0.0.1", quint16(port + 1));
      if (!stranger.waitForConnected(100)) stranger.abort();
    }
    QVERIFY(stranger.state() == QAbstractSocket::ConnectedState);
    events::Hello h{1, 2, "elsewhere", "cpu", "not-the-token", 1};
    const std::string bytes = events::encode(h.make());
    stranger.write(bytes.data(), qint64(bytes.size()));
    QVERIFY(stranger.waitForDisconnected(10000));
    QVERIFY2(wait_for_text(first, err, "it did not present the job's token"), qPrintable(err));
    second.start(kLaunch, machine + QStringList{"--node_rank", "1"});
    const auto r1 = finish(first, err), r2 = finish(second);
    QVERIFY2(r1.code == 0, qPrintable(r1.err));
    QVERIFY2(r2.code == 0, qPrintable(r2.err));
    const auto all = read_events(path("tcp.jsonl"));
    QCOMPARE(of_kind(all, "hello").size(), size_t(2));
    QCOMPARE(of_kind(all, "done").size(), size_t(2));
    QVERIFY(QFileInfo(path("tcp.mp4")).size() > 1000);
    QVERIFY(all_gone(pids_of(all)));
  }

  void a_rank_lost_on_another_machine_is_named() {
    // Two launchers over loopback TCP; the rank of the second "machine" is killed mid-run. The first
    // launcher names that rank (not its partner, which only lost its peer), and both stop.
    const int port = 21000 + int(QCoreApplication::applicationPid() % 20000);
    const QStringList machine = demo_job(1000) + QStringList{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr",
                                                             "127.0.0.1", "--master_port", QString::number(port)};
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("DIT_STUDIO_TOKEN", "00112233445566778899aabbccddeeff");
    const QString log = path("remote.jsonl");
    QProcess first, second;
    first.setProcessEnvironment(env);
    second.setProcessEnvironment(env);
    first.start(kLaunch, machine + QStringList{"--node_rank", "0", "--events_log", log});
    second.start(kLaunch, machine + QStringList{"--node_rank", "1"});
    QString err;
    QVERIFY2(wait_for_text(first, err, "step 2/1000"), qPrintable(err));
    const auto pids = pids_of(read_events(log));
    QCOMPARE(pids.size(), size_t(2));
    const int64_t victim = of_kind(read_events(log), "hello", 1)[0]["body"]["pid"];
    ::kill(pid_t(victim), SIGKILL);
    const auto r1 = finish(first, err, 30000), r2 = finish(second, {}, 30000);
    QVERIFY(r1.code != 0 && r2.code != 0);
    QVERIFY2(r1.err.contains(QString("rank 1 (pid %1").arg(victim)) &&
                 r1.err.contains("closed its events connection without a result"),
             qPrintable(r1.err));
    QVERIFY2(r2.err.contains("was killed by signal 9"), qPrintable(r2.err));
    QVERIFY(all_gone(pids));
  }

  void two_machines_in_network_namespaces() {
    // Two network namespaces joined by a veth pair stand for two machines with their own addresses.
    const QString a = QString("ditA%1").arg(QCoreApplication::applicationPid()),
                  b = QString("ditB%1").arg(QCoreApplication::applicationPid());
    auto ip = [](const QStringList& args) {
      QProcess p;
      p.start("ip", args);
      p.waitForFinished();
      return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    };
    if (!ip({"netns", "add", a})) QSKIP("cannot create network namespaces here (needs root and iproute2)");
    ip({"netns", "add", b});
    auto cleanup = qScopeGuard([&] {
      ip({"netns", "del", a});
      ip({"netns", "del", b});
    });
    const QString va = "v" + a.right(8), vb = "v" + b.right(8);
    QVERIFY(ip({"link", "add", va, "type", "veth", "peer", "name", vb}));
    QVERIFY(ip({"link", "set", va, "netns", a}) && ip({"link", "set", vb, "netns", b}));
    QVERIFY(ip({"-n", a, "addr", "add", "10.231.0.1/24", "dev", va}) && ip({"-n", b, "addr", "add", "10.231.0.2/24", "dev", vb}));
    for (const auto& [ns, dev] : {std::pair{a, va}, std::pair{b, vb}}) {
      QVERIFY(ip({"-n", ns, "link", "set", dev, "up"}));
      QVERIFY(ip({"-n", ns, "link", "set", "lo", "up"}));
    }
    const QStringList job = demo_job(2) + QStringList{"--use_cfg_parallel", "--nnodes", "2", "--master_addr",
                                                      "10.231.0.1", "--master_port", "29600"};
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("DIT_STUDIO_TOKEN", "fedcba9876543210fedcba9876543210");
    QProcess first, second;
    first.setProcessEnvironment(env);
    second.setProcessEnvironment(env);
    first.start("ip", QStringList{"netns", "exec", a, kLaunch} + job +
                          QStringList{"--node_rank", "0", "--events_log", path("netns.jsonl"), "--save_tensors",
                                      path("netns.safetensors")});
    second.start("ip", QStringList{"netns", "exec", b, kLaunch} + job + QStringList{"--node_rank", "1"});
    const auto r1 = finish(first), r2 = finish(second);
    QVERIFY2(r1.code == 0, qPrintable(r1.err));
    QVERIFY2(r2.code == 0, qPrintable(r2.err));
    const auto all = read_events(path("netns.jsonl"));
    QCOMPARE(of_kind(all, "done").size(), size_t(2));
    QVERIFY(QFile::exists(path("netns.safetensors")));
    QVERIFY(all_gone(pids_of(all)));
  }
};

QTEST_GUILESS_MAIN(TestWorkers)
#include "test_workers.moc"
