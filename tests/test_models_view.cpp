// The studio's Models tab, offscreen, against the local Hub stand-in (tests/hub/fake_hub.h) serving the
// flux_words_tiny golden folder as repositories: an empty cache listed, a download paused mid-file and
// resumed with Range, the model listed with its family and size, verified, used by the compose panel,
// removed after the question; a cancelled download that leaves nothing; a gated repo refused without a
// token, then fetched with the token typed in the view while no secret store is reachable.
// With STUDIO_SCREENSHOTS=DIR it also saves a picture of the tab there (docs/screenshots).
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <filesystem>
#include <memory>

#include "gui/window/main_window.h"
#include "gui/models/models_view.h"
#include "hub/fake_hub.h"
#include "hub/known_models.h"
#include "plan/human_bytes.h"
#include "studio_support.h"

namespace fs = std::filesystem;

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

const char* kRepo = "test-org/flux-words-tiny";
const char* kGated = "test-org/flux-gated";
const char* kToken = "hf_test_token";
const char* kHeldFile = "transformer/diffusion_pytorch_model.safetensors";  // 398,000 bytes
constexpr uint64_t kHeldBytes = 150000;  // where the hub holds it: inside, part of it written

// The view's next task ending (HubTask::Ending), or -1 when none comes in `ms`.
int wait_for_task(QSignalSpy& spy, int ms = 30000) {
  if (spy.isEmpty() && !spy.wait(ms)) return -1;
  return spy.takeFirst().at(0).toInt();
}

// What a download of the golden folder brings: every file but the golden's own tensors.
uint64_t expected_bytes(const std::string& folder) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.is_regular_file() && e.path().filename() != "golden.safetensors") n += e.file_size();
  return n;
}

bool has_partial_file(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".incomplete" && fs::file_size(it->path()) > 0) return true;
  return false;
}

}  // namespace

class TestModelsView : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<test::FakeHub> hub_;
  std::string cache_;

  // `source` in the cache as repository `repo`'s one file `name` (as `dit-models download REPO FILE` leaves it);
  // returns the repository's folder.
  std::string cache_one_file(const std::string& repo, const std::string& source, const std::string& name) {
    const std::string commit = "0123456789abcdef0123456789abcdef01234567";
    const std::string dir = hub::repo_dir(cache_, repo);
    std::string blob = std::to_string(std::hash<std::string>{}(name));  // one blob per file of the repository
    blob.resize(64, 'a');
    fs::create_directories(dir + "/blobs");
    fs::copy_file(source, dir + "/blobs/" + blob);
    hub::link_snapshot_file(dir, commit, name, blob);
    hub::write_ref(dir, "main", commit);
    return dir;
  }
  // The cache table's row of `repo`, -1 when it is not listed.
  static int row_of(ModelsView& v, const std::string& repo) {
    for (int i = 0; i < v.cache_table->rowCount(); ++i)
      if (v.cache_table->item(i, 0)->text() == QString::fromStdString(repo)) return i;
    return -1;
  }

  // Whether the download is inside the held file, part of it written.
  static bool inside_held_file(ModelsView& v) {
    return v.progress_label->text().contains("transformer/") && v.file_bar->value() > 0 && v.file_bar->value() < 1000;
  }

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio models tests");
    // No secret store, whatever desktop runs the suite: the session bus points at nothing.
    qputenv("DBUS_SESSION_BUS_ADDRESS", ("unix:path=" + tmp_.path() + "/no-bus").toUtf8());
    qunsetenv("HF_TOKEN");
    qputenv("HF_HOME", (tmp_.path() + "/hf").toUtf8());  // no token file either
    cache_ = (tmp_.path() + "/hub").toStdString();
    qputenv("HF_HUB_CACHE", QByteArray::fromStdString(cache_));
    hub_ = std::make_unique<test::FakeHub>();
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub_->endpoint()));
    hub_->add_repo(kRepo, test::golden_case("flux_words_tiny"));
    hub_->add_repo(kGated, test::golden_case("flux_words_tiny"), kToken);
  }

  void downloads_pauses_resumes_uses_verifies_and_removes() {
    MainWindow w(tmp_.path() + "/data");
    w.resize(1280, 900);
    w.show();
    ModelsView& v = w.models_view();
    tabs(w)->setCurrentWidget(&v);
    QTRY_VERIFY_WITH_TIMEOUT(!v.listing(), 20000);  // the cache is read on a thread
    // An empty cache, and the models we run with their sizes and memory.
    QCOMPARE(v.cache_table->rowCount(), 0);
    QVERIFY2(v.status->text().contains("No models in " + QString::fromStdString(cache_)), qPrintable(v.status->text()));
    QCOMPARE(v.known_table->rowCount(), int(hub::known_models().size()));
    QCOMPARE(v.known_table->item(5, 2)->text(), QString("black-forest-labs/FLUX.1-dev"));
    QVERIFY(v.known_table->item(5, 1)->text().contains("gated"));
    QCOMPARE(v.known_table->item(0, 3)->text(), QString("13.8 GB"));

    // Paused inside the held file: the partial file stays, and the window answers meanwhile.
    hub_->hold(kHeldFile, kHeldBytes);
    QSignalSpy ended(&v, &ModelsView::task_finished);
    // Returns while the hub holds the file (a download on the GUI thread would wait here for good).
    QVERIFY2(v.download(kRepo), qPrintable(v.status->text()));
    QVERIFY(!v.download(kRepo));  // one at a time
    QTRY_VERIFY_WITH_TIMEOUT(inside_held_file(v), 20000);
    std::printf("paused at: %s\n", qPrintable(v.progress_label->text()));
    QVERIFY(v.progress_label->text().contains("/s, ETA"));
    v.pause_button->click();
    QCOMPARE(wait_for_task(ended), int(HubTask::Stopped));
    QVERIFY2(v.status->text().startsWith("Paused " + QString(kRepo)), qPrintable(v.status->text()));
    QCOMPARE(v.pause_button->text(), QString("Resume"));
    QVERIFY(v.cancel_button->isEnabled() && !v.download_button->isEnabled());
    QVERIFY(has_partial_file(cache_));

    // Resumed: the held file continues from where it stopped, with Range.
    hub_->release(kHeldFile);
    hub_->forget_requests();
    v.pause_button->click();
    QCOMPARE(wait_for_task(ended), int(HubTask::Done));
    QString ranges;
    for (const auto& r : hub_->requests())
      if (r.target.find(kHeldFile) != std::string::npos) ranges += QString::fromStdString(r.range) + " ";
    std::printf("resumed with: %s\n", qPrintable(ranges));
    QVERIFY2(ranges.startsWith("bytes=") && !ranges.startsWith("bytes=0-"), qPrintable(ranges));
    QVERIFY2(v.status->text().startsWith("Downloaded " + QString(kRepo)), qPrintable(v.status->text()));
    QVERIFY(!has_partial_file(cache_));

    // Listed with its family, size, revision and state.
    QCOMPARE(v.cache_table->rowCount(), 1);
    QCOMPARE(v.cache_table->item(0, 0)->text(), QString(kRepo));
    QCOMPARE(v.cache_table->item(0, 1)->text(), QString("FLUX.1"));
    const uint64_t bytes = expected_bytes(test::golden_case("flux_words_tiny"));
    QCOMPARE(v.cache_table->item(0, 2)->text(), QString::fromStdString(plan::human_bytes(bytes)));
    QCOMPARE(hub::list_cache(cache_).at(0).bytes_on_disk, bytes);
    const QString revision = v.cache_table->item(0, 3)->text();
    QVERIFY2(revision.startsWith("main (" + QString::fromStdString(hub_->commit(kRepo)).left(8)), qPrintable(revision));
    QCOMPARE(v.cache_table->item(0, 4)->text(), QString("complete, verified"));

    // Use: the compose panel reads the snapshot, a FLUX.1 pipeline.
    v.cache_table->selectRow(0);
    QVERIFY(v.use_button->isEnabled());
    QVERIFY2(!w.compose_panel().family->text().contains("FLUX.1"), qPrintable(w.compose_panel().family->text()));
    v.use_button->click();
    const QString snapshot = QString::fromStdString(hub::snapshot_dir(cache_, kRepo));
    QCOMPARE(w.compose_panel().model_edit->text(), snapshot);
    QVERIFY2(w.compose_panel().family->text().contains("FLUX.1"), qPrintable(w.compose_panel().family->text()));
    QVERIFY(w.compose_panel().model() != nullptr);

    // Verify hashes it again, off the GUI thread.
    v.verify_button->click();
    QVERIFY(!v.verify_button->isEnabled());
    QCOMPARE(wait_for_task(ended), int(HubTask::Done));
    QVERIFY2(v.status->text().contains("match their hashes"), qPrintable(v.status->text()));
    shoot_sizes(&w, "models");

    // Remove asks first: No keeps it, Yes removes it.
    answer_next("confirm_remove", QMessageBox::No);
    v.remove_button->click();
    QCOMPARE(v.cache_table->rowCount(), 1);
    answer_next("confirm_remove", QMessageBox::Yes);
    v.remove_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!v.listing(), 20000);
    QCOMPARE(v.cache_table->rowCount(), 0);
    QVERIFY(!fs::exists(hub::repo_dir(cache_, kRepo)));
    QVERIFY2(v.status->text().startsWith("Removed " + QString(kRepo)), qPrintable(v.status->text()));
  }

  // A GGUF repository's one quant, as `dit-models download REPO FILE` leaves it: listed as a single file, not as
  // an incomplete pipeline, and Use makes it the transformer file of the folder chosen.
  void a_single_file_is_listed_and_used_as_the_transformer() {
    const std::string repo = "city96/FLUX.1-dev-gguf";
    const std::string dir =
        cache_one_file(repo, test::golden_case("flux_gguf_tiny") + "/transformer-Q4_0.gguf", "flux1-dev-Q4_0.gguf");
    MainWindow w(tmp_.path() + "/single");
    w.show();
    ModelsView& v = w.models_view();
    v.refresh();
    QTRY_VERIFY_WITH_TIMEOUT(!v.listing(), 20000);
    const int row = row_of(v, repo);
    QVERIFY(row >= 0);
    QCOMPARE(v.cache_table->item(row, 1)->text(), QString("single file: flux1-dev-Q4_0.gguf"));
    QVERIFY2(v.cache_table->item(row, 4)->text().startsWith("complete"), qPrintable(v.cache_table->item(row, 4)->text()));
    v.cache_table->selectRow(row);
    v.use_button->click();
    const QString file = QString::fromStdString(hub::snapshot_dir(cache_, repo)) + "/flux1-dev-Q4_0.gguf";
    QCOMPARE(w.compose_panel().memory->transformer->text(), file);
    QCOMPARE(w.compose_panel().job().transformer_file, file.toStdString());
    QVERIFY(w.compose_panel().memory_group->is_open());
    fs::remove_all(dir);
  }

  // A LoRA repository's file (flux_lora_tiny's kohya one): listed by the family its blocks are and the width they
  // read, and Use adds it to the compose LoRA list; on a Wan model the studio refuses it before the run.
  void a_lora_is_listed_by_its_family_and_used_as_a_lora() {
    const std::string repo = "someone/flux-style-lora";
    const std::string dir =
        cache_one_file(repo, test::golden_case("flux_lora_tiny") + "/lora_kohya.safetensors", "style.safetensors");
    MainWindow w(tmp_.path() + "/lora");
    w.show();
    ModelsView& v = w.models_view();
    v.refresh();
    QTRY_VERIFY_WITH_TIMEOUT(!v.listing(), 20000);
    const int row = row_of(v, repo);
    QVERIFY(row >= 0);
    QCOMPARE(v.cache_table->item(row, 1)->text(), QString("LoRA for FLUX.1, width 32: style.safetensors"));
    v.cache_table->selectRow(row);
    v.use_button->click();
    const QString file = QString::fromStdString(hub::snapshot_dir(cache_, repo)) + "/style.safetensors";
    QCOMPARE(w.compose_panel().job().lora, file.toStdString() + ":1");
    w.compose_panel().set_model_dir(QString::fromStdString(test::golden_case("wan21_tiny")));
    bool refused = false;
    for (const auto& p : w.validate())
      refused |= p.field == "lora" && p.message.find("a LoRA for FLUX.1") != std::string::npos &&
                 p.message.find("choose a LoRA made for Wan") != std::string::npos;
    QVERIFY(refused);
    fs::remove_all(dir);
  }

  // A repository of several LoRAs, one in a subfolder (as Kijai/WanVideo_comfy keeps them): each file listed by
  // the family it fits, and Use asks which one.
  void a_repository_of_several_loras_lists_each_and_asks_which() {
    const std::string repo = "someone/lora-collection";
    const std::string dir =
        cache_one_file(repo, test::golden_case("flux_lora_tiny") + "/lora_kohya.safetensors", "flux_style.safetensors");
    cache_one_file(repo, test::golden_case("wan21_lora_tiny") + "/lora_comfy.safetensors", "Wan/motion.safetensors");
    MainWindow w(tmp_.path() + "/loras");
    w.show();
    ModelsView& v = w.models_view();
    v.refresh();
    QTRY_VERIFY_WITH_TIMEOUT(!v.listing(), 20000);
    const int row = row_of(v, repo);
    QVERIFY(row >= 0);
    const QString family = v.cache_table->item(row, 1)->text();
    QVERIFY2(family.contains("LoRA for FLUX.1, width 32: flux_style.safetensors") &&
                 family.contains("LoRA for Wan") && family.contains("Wan/motion.safetensors"),
             qPrintable(family));
    v.cache_table->selectRow(row);
    v.use_button->click();
    QTRY_VERIFY(v.files_menu->isVisible());
    QCOMPARE(v.files_menu->actions().size(), 2);
    for (QAction* a : v.files_menu->actions())
      if (a->text().startsWith("Wan/motion.safetensors")) a->trigger();
    const QString file = QString::fromStdString(hub::snapshot_dir(cache_, repo)) + "/Wan/motion.safetensors";
    QVERIFY2(w.compose_panel().job().lora == file.toStdString() + ":1", w.compose_panel().job().lora.c_str());
    fs::remove_all(dir);
  }

  void a_cancelled_download_leaves_nothing() {
    ModelsView v;
    v.show();
    hub_->hold(kHeldFile, kHeldBytes);
    QSignalSpy ended(&v, &ModelsView::task_finished);
    QVERIFY(v.download(kRepo));
    QTRY_VERIFY_WITH_TIMEOUT(inside_held_file(v), 20000);
    v.cancel_button->click();
    QCOMPARE(wait_for_task(ended), int(HubTask::Stopped));
    hub_->release(kHeldFile);
    QVERIFY2(v.status->text().startsWith("Cancelled " + QString(kRepo)), qPrintable(v.status->text()));
    QVERIFY(!fs::exists(hub::repo_dir(cache_, kRepo)));
    QCOMPARE(v.cache_table->rowCount(), 0);
    QVERIFY(v.download_button->isEnabled() && !v.pause_button->isEnabled() && !v.cancel_button->isEnabled());
  }

  void a_gated_repo_needs_the_token() {
    ModelsView v;
    v.show();
    // No secret store here: said in the view, with what happens to a token typed in.
    QTRY_VERIFY_WITH_TIMEOUT(v.token_status->text().contains("No secret store is available"), 10000);
    QVERIFY(v.token_status->text().contains("this session only"));
    QVERIFY2(!v.token_status->text().contains("Unknown error"), qPrintable(v.token_status->text()));
    QSignalSpy ended(&v, &ModelsView::task_finished);
    QVERIFY(v.download(kGated));
    QCOMPARE(wait_for_task(ended), int(HubTask::Failed));
    std::printf("refused: %s\n", qPrintable(v.status->text()));
    QVERIFY2(v.status->text().contains("401 Unauthorized") && v.status->text().contains("Hugging Face token field"),
             qPrintable(v.status->text()));
    QCOMPARE(v.cache_table->rowCount(), 0);  // nothing arrived: no empty folder listed

    v.token_edit->setText(kToken);
    v.save_token_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(v.token_status->text().contains("this session only"), 10000);
    QCOMPARE(v.settings().token, std::string(kToken));
    QSettings settings;  // never in the settings
    for (const QString& key : settings.allKeys()) QVERIFY(!settings.value(key).toString().contains(kToken));
    QVERIFY(v.download(kGated));
    QCOMPARE(wait_for_task(ended), int(HubTask::Done));
    QCOMPARE(v.cache_table->rowCount(), 1);
    QCOMPARE(v.cache_table->item(0, 0)->text(), QString(kGated));
    bool sent = false;
    for (const auto& r : hub_->requests()) sent |= r.authorization == std::string("Bearer ") + kToken;
    QVERIFY(sent);
  }
};

QTEST_MAIN(TestModelsView)
#include "test_models_view.moc"
