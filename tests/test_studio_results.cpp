// The studio's results, offscreen, with real workers and the demo model: History as a library (its
// columns, search, play into the Player, selection by run id, delete asked and undone), the Player keeping
// a past run while the next starts and stops, export in the chosen format with every setting read back by
// engine/video, the run view's plots (hidden before data, y from zero, whole steps), the sweep chart's
// short labels and metrics, Compare's readable settings and difference picture, and the strip of recent
// results along the window's bottom.
// With STUDIO_SCREENSHOTS=DIR it saves these views at 1280 x 800 and 1920 x 1080 there.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QCryptographicHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "gui/window/main_window.h"
#include "plan/job_file.h"
#include "gui/results/run_info.h"
#include "gui/run/step_plots.h"
#include "qcustomplot.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

QString cell(const History& h, qint64 id, const QString& column) {
  for (int c = 0; c < h.table->columnCount(); ++c)
    if (h.table->horizontalHeaderItem(c)->text() == column)
      for (int r = 0; r < h.table->rowCount(); ++r)
        if (h.table->item(r, 0)->data(Qt::UserRole).toLongLong() == id) return h.table->item(r, c)->text();
  return "(none)";
}

}  // namespace

class TestStudioResults : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio results tests");
  }

  // One window through the whole library: runs, play, a run that stops, export, selection, delete, compare.
  void history_is_a_library_and_the_player_keeps_any_run() {
    const QString data = tmp_.path() + "/library";
    MainWindow w(data);
    w.resize(1280, 800);
    w.show();
    // Before any run the plots are hidden, a line says what will be there.
    QVERIFY(w.run_view().step_plot->isHidden() && w.run_view().memory_plot->isHidden());
    QVERIFY(!w.run_view().plots->waiting->isHidden());

    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().negative_prompt->setText("blurry");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(3);
    w.parallel_panel().ulysses->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    // The plots: shown, y from zero, steps in whole numbers, one colour per rank (none pale).
    QVERIFY(!w.run_view().step_plot->isHidden() && !w.run_view().memory_plot->isHidden());
    QVERIFY(w.run_view().plots->waiting->isHidden());
    for (auto* p : {w.run_view().step_plot, w.run_view().memory_plot}) {
      QCOMPARE(p->yAxis->range().lower, 0.0);
      auto ticker = p->xAxis->ticker().dynamicCast<QCPAxisTickerFixed>();
      QVERIFY(ticker && ticker->tickStep() == 1.0);
    }
    QVERIFY(rank_colour(0) != rank_colour(1) && rank_colour(1).lightness() < 160);
    tabs(w)->setCurrentWidget(&w.run_view());
    QVERIFY(w.run_view().step_plot->height() >= 180);
    shoot_sizes(&w.run_view(), "run");

    // In the library with its key settings as columns.
    const qint64 first = w.history().runs().front().id;
    const QString first_folder = w.history().runs().front().folder;
    QCOMPARE(cell(w.history(), first, "Model"), QString("demo-model"));
    QCOMPARE(cell(w.history(), first, "Size"), QString("288 x 192"));
    QCOMPARE(cell(w.history(), first, "Frames"), QString("9"));
    QCOMPARE(cell(w.history(), first, "Steps"), QString("3"));
    QCOMPARE(cell(w.history(), first, "Configuration"), QString("U2"));
    QCOMPARE(cell(w.history(), first, "Status"), QString("done"));
    QVERIFY(cell(w.history(), first, "Total").endsWith(" s"));
    QCOMPARE(w.history().gallery->count(), 1);
    // Play loads it into the Player.
    tabs(w)->setCurrentWidget(&w.history());
    w.history().select({first});
    w.history().play_button->click();
    // Its frames are read on a thread: the window goes on meanwhile and says so.
    QVERIFY(w.player().opening());
    QVERIFY2(w.history().status->text().startsWith("Opening run"), qPrintable(w.history().status->text()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QVERIFY(w.history().status->text().isEmpty());
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.player()));
    QCOMPARE(w.player().source(), first_folder);
    QCOMPARE(w.player().frame_count(), 9);
    QVERIFY(w.player().title->text().contains("a paper boat"));
    // Where the scrubber is, in frames.
    QCOMPARE(w.player().frame_label->text(), QString("frame 1 of 9"));
    w.player().slider->setValue(4);
    QCOMPARE(w.player().frame_label->text(), QString("frame 5 of 9"));

    // A second run starting, then stopped before it made a frame, leaves the Player as it was.
    w.compose_panel().prompt->setPlainText("a lighthouse at dusk");
    w.compose_panel().steps->setValue(200);
    w.parallel_panel().ulysses->setValue(1);
    w.parallel_panel().ring->setValue(2);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QTRY_VERIFY_WITH_TIMEOUT(w.run_view().bars.at(0)->value() >= 1, 120000);
    QCOMPARE(w.player().source(), first_folder);
    QCOMPARE(w.player().frame_count(), 9);
    w.cancel();
    QCOMPARE(wait_for_run(spy, 60000), 130);
    for (const auto* l : w.run_view().findChildren<QLabel*>())  // the rows say the run was cancelled, not failed
      if (l->text().startsWith("rank "))
        QVERIFY2(l->text().contains("cancelled") && !l->text().contains("failed"), qPrintable(l->text()));
    QCOMPARE(w.player().source(), first_folder);
    QCOMPARE(w.player().frame_count(), 9);
    // The plots start over with it: its points only (ranges from zero).
    QVERIFY(w.run_view().step_plot->graph(0)->dataCount() < 200);

    // A third run, the first one's settings with Ring 2: finished, it takes the Player over.
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().steps->setValue(3);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(w.history().runs().size(), size_t(3));
    const qint64 third = w.history().runs().front().id;
    QCOMPARE(w.player().source(), w.history().runs().front().folder);
    QCOMPARE(cell(w.history(), third, "Configuration"), QString("R2"));

    // Search by prompt.
    w.history().search->setText("LIGHTHOUSE");
    QCOMPARE(w.history().table->rowCount(), 1);
    w.history().search->clear();
    QCOMPARE(w.history().table->rowCount(), 3);

    // The selection follows the runs, not the rows: a run arriving on top keeps the same two selected.
    w.history().select({first, third});
    RunRecord arriving = w.history().runs().front();
    arriving.id = 0;
    arriving.prompt = "a run that just finished";
    arriving.folder.clear();
    const qint64 fourth = w.history().add(arriving);
    QCOMPARE(w.history().selected_ids(), (std::vector<qint64>{third, first}));
    QCOMPARE(w.history().gallery->selectedItems().size(), 2);
    QVERIFY(w.history().compare_button->isEnabled());

    // Compare the two: readable names, only what differs shown (the output file hidden), the difference picture.
    w.history().compare_button->click();
    QVERIFY(w.compare_view().loading());
    QVERIFY2(w.compare_view().difference->text().startsWith("Reading"), qPrintable(w.compare_view().difference->text()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.compare_view().loading(), 30000);
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.compare_view()));
    auto* split = w.findChild<QSplitter*>("split");
    QVERIFY(!split->widget(0)->isVisible());  // full width
    auto* s = w.compare_view().settings;
    QStringList shown;
    for (int i = 0; i < s->rowCount(); ++i)
      if (!s->isRowHidden(i)) shown << s->item(i, 0)->data(Qt::UserRole).toString();
    QCOMPARE(shown, (QStringList{"ring_degree", "ulysses_degree"}));
    // Each run named by number, prompt and configuration, not by number alone.
    for (int c : {1, 2}) {
      const QString header = s->horizontalHeaderItem(c)->text();
      bool named = false;
      for (qint64 id : {first, third})
        if (const auto r = w.history().run(id))
          named = named || header == QString(c == 1 ? "A: " : "B: ") + run_name(r->id, r->prompt, r->settings);
      QVERIFY2(named, qPrintable(header));
    }
    for (int i = 0; i < s->rowCount(); ++i)
      if (s->item(i, 0)->data(Qt::UserRole) == "ring_degree") QCOMPARE(s->item(i, 0)->text(), QString("Ring"));
    w.compare_view().show_all->setChecked(true);
    int visible = 0;
    for (int i = 0; i < s->rowCount(); ++i) visible += !s->isRowHidden(i);
    QCOMPARE(visible, s->rowCount());
    w.compare_view().show_all->setChecked(false);
    QVERIFY2(w.compare_view().max_difference >= 0 && w.compare_view().max_difference <= 1,
             qPrintable(w.compare_view().difference->text()));
    QVERIFY(!w.compare_view().difference_image->pixmap().isNull());
    QVERIFY(w.compare_view().plot->yAxis->range().lower == 0);
    shoot_sizes(&w.compare_view(), "compare");
    tabs(w)->setCurrentWidget(&w.history());
    QVERIFY(split->widget(0)->isVisible());

    // A run that kept no frames is said, the Player left as it is; so is one whose folder is gone, in Compare too.
    const QString before = w.player().source();
    w.history().select({fourth});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.history().status->text(), QString("Run %1 kept no frames (it made none).").arg(fourth));
    QCOMPARE(w.player().source(), before);
    RunRecord moved = *w.history().run(first);
    moved.id = 0;
    moved.folder = tmp_.path() + "/moved-away";
    const qint64 fifth = w.history().add(moved);
    w.history().select({fifth});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.history().status->text(),
             QString("Run %1's folder %2 is gone (moved or deleted): nothing to play.").arg(fifth).arg(moved.folder));
    QCOMPARE(w.player().source(), before);
    w.history().select({first, fifth});
    w.history().compare_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.compare_view().loading(), 30000);
    QVERIFY2(w.compare_view().difference->text().startsWith(QString("Run %1's folder").arg(fifth)) &&
                 w.compare_view().max_difference < 0,
             qPrintable(w.compare_view().difference->text()));
    // Deleting it promises no files, and Undo restores no files.
    QVERIFY(w.history().remove({fifth}));
    QCOMPARE(w.history().status->text(), QString("Deleted one run (its folder was already gone): Undo brings its "
                                                 "record back."));
    QVERIFY(w.history().undo());
    QCOMPARE(w.history().status->text(), QString("Restored one run."));
    QVERIFY(w.history().remove({fifth}));
    // Two runs asked for one after the other: the later one is shown. One deleted while its frames are read: not.
    const QString third_folder = w.history().run(third)->folder;
    w.history().select({first});
    w.history().play_button->click();
    w.history().select({third});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.player().source(), third_folder);
    w.history().select({first});
    w.history().play_button->click();
    QVERIFY(w.history().remove(first));
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.player().source(), third_folder);
    QVERIFY2(w.history().status->text().contains("is gone"), qPrintable(w.history().status->text()));
    QVERIFY(w.history().undo());

    // Export in the format chosen, the name given without an extension: every setting in the file's
    // metadata and its sidecar, and where it went said with a link to the folder.
    w.history().select({first});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    w.player().pause();
    QString error;
    w.player().format->setCurrentIndex(w.player().format->findData(".webm"));
    QSignalSpy exported(&w.player(), &Player::exported);
    const QString written = w.player().export_chosen(tmp_.path() + "/boat", &error);
    QCOMPARE(written, tmp_.path() + "/boat.webm");
    // Written on a thread of its own: the window goes on meanwhile, and says how far it is.
    QVERIFY2(w.player().note->text().startsWith("Exporting to " + written), qPrintable(w.player().note->text()));
    QVERIFY(!w.player().export_button->isEnabled() && !w.player().cancel_export_button->isHidden());
    QVERIFY2(wait_for_export(w.player(), &error), qPrintable(error));
    QCOMPARE(exported.size(), 1);
    QVERIFY(w.player().export_button->isEnabled() && w.player().cancel_export_button->isHidden());
    QVERIFY(w.player().note->text().contains(written) && w.player().note->text().contains("Open folder"));
    // "Open folder" where no file manager answers (the offscreen platform has none): said, with the path.
    Q_EMIT w.player().note->linkActivated(QUrl::fromLocalFile(tmp_.path()).toString());
    QVERIFY2(w.player().note->text().contains("No file manager answered") && w.player().note->text().contains(tmp_.path()),
             qPrintable(w.player().note->text()));
    w.history().folder_button->click();
    QVERIFY2(w.history().status->text().contains("No file manager answered") &&
                 w.history().status->text().contains(w.history().run(first)->folder),
             qPrintable(w.history().status->text()));
    const auto probe = video::probe_clip(written.toStdString());
    QCOMPARE(probe.frames, 9);
    QCOMPARE(probe.metadata.at("num_inference_steps"), std::string("3"));
    QCOMPARE(probe.metadata.at("negative_prompt"), std::string("blurry"));
    QCOMPARE(probe.metadata.at("guidance_scale"), std::string("6"));
    QCOMPARE(probe.metadata.at("sampler").empty(), false);
    QCOMPARE(probe.metadata.at("parallel"), std::string("ulysses 2 (2 processes)"));
    QVERIFY(QFile::exists(written + ".json"));
    // Cancelled at once: nothing at the path, nor any partial file beside it.
    QVERIFY(QDir().mkpath(tmp_.path() + "/cut"));
    const QString cut = w.player().export_chosen(tmp_.path() + "/cut/boat", &error);
    QVERIFY2(!cut.isEmpty(), qPrintable(error));
    w.player().cancel_export_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(w.player().export_button->isEnabled(), 60000);
    QVERIFY2(w.player().note->text().startsWith("Export cancelled: nothing was written"), qPrintable(w.player().note->text()));
    QCOMPARE(exported.size(), 1);
    QVERIFY(QDir(tmp_.path() + "/cut").isEmpty());
    // MP4 keeps them too; a folder of PNG frames only when it is the format chosen.
    w.player().format->setCurrentIndex(w.player().format->findData(".mp4"));
    const QString mp4 = w.player().export_chosen(tmp_.path() + "/boat.gif", &error);
    QCOMPARE(mp4, tmp_.path() + "/boat.mp4");
    QVERIFY2(wait_for_export(w.player(), &error), qPrintable(error));
    QCOMPARE(video::probe_clip(mp4.toStdString()).metadata.at("num_inference_steps"), std::string("3"));
    QVERIFY(!QFileInfo(tmp_.path() + "/boat").isDir());
    // A GIF has no tags: its comment holds them.
    w.player().format->setCurrentIndex(w.player().format->findData(".gif"));
    const QString gif = w.player().export_chosen(tmp_.path() + "/boat", &error);
    QVERIFY2(wait_for_export(w.player(), &error), qPrintable(error));
    QVERIFY2(w.player().note->text().contains("every setting in its metadata"), qPrintable(w.player().note->text()));
    const auto in_gif = nlohmann::json::parse(video::probe_clip(gif.toStdString()).settings);
    QCOMPARE(in_gif.value("num_inference_steps", 0), 3);
    QCOMPARE(in_gif.value("frames", 0), 9);
    QVERIFY(QFile::exists(gif + ".json"));
    w.player().format->setCurrentIndex(w.player().format->findData("/"));
    const QString pngs = w.player().export_chosen(tmp_.path() + "/frames", &error);
    QVERIFY2(wait_for_export(w.player(), &error), qPrintable(error));
    QCOMPARE(video::probe_clip(pngs.toStdString()).frames, 9);
    tabs(w)->setCurrentWidget(&w.player());
    shoot_sizes(&w.player(), "player");

    // Delete asks; "Keep them" keeps them.
    bool asked = false;
    w.history().select({first});
    answer_next("confirm_delete", QMessageBox::No, &asked);
    w.history().delete_button->click();
    QVERIFY(asked);
    QVERIFY(QDir(first_folder).exists() && w.history().run(first));
    // "Delete": the record and the files go (to the trash), Undo brings both back under the same id.
    answer_next("confirm_delete", QMessageBox::Yes, &asked);
    w.history().delete_button->click();
    QVERIFY(asked);
    QVERIFY(!QDir(first_folder).exists() && !w.history().run(first));
    QVERIFY(w.history().undo_button->isEnabled());
    w.history().undo_button->click();
    QVERIFY(QDir(first_folder).exists() && QFile::exists(first_folder + "/clip.mp4"));
    QCOMPARE(w.history().run(first)->folder, first_folder);
    QCOMPARE(w.history().selected_ids(), std::vector<qint64>{first});
    w.history().remove(fourth);
    tabs(w)->setCurrentWidget(&w.history());
    // At 1280 x 800 the list fits its width: no horizontal scrollbar, the prompt readable.
    w.resize(1280, 800);
    QTest::qWait(200);
    QVERIFY(!w.history().table->horizontalScrollBar()->isVisible());
    QVERIFY(w.history().table->columnWidth(2) >= 220);
    shoot_sizes(&w.history(), "history");
    w.history().gallery_button->click();
    shoot_sizes(&w.history(), "gallery");
    w.history().list_button->click();
    // Deleted again and the studio closed: the trash is emptied, nothing can come back.
    w.history().remove(first);
    QVERIFY(QDir(data + "/trash").exists());
    w.close();
  }

  // An export's metadata: the settings read again from the job, with the LoRAs and pictures it named; where the
  // worker wrote its output, its sidecar (the files' SHA-256 as they were when the run read them) overrides.
  void export_metadata_takes_the_run_s_own() {
    QTemporaryDir run;
    plan::JobFile f;
    f.job.model_dir = test::golden_case("flux_words_tiny");
    f.job.prompt = "a fox";
    f.job.lora = "/loras/style.safetensors:0.8";
    f.job.output_file = (run.path() + "/image.png").toStdString();
    auto m = run_metadata(f);
    QCOMPARE(QString::fromStdString(m["lora"]), QString("/loras/style.safetensors:0.8"));
    QVERIFY(!m.count("lora_sha256"));  // not hashed again: the file may have changed since
    QVERIFY(m.count("settings") && m["model_family"] != "");
    QFile side(run.path() + "/image.png.json");
    QVERIFY(side.open(QIODevice::WriteOnly));
    side.write(R"({"lora": "/loras/style.safetensors:0.8", "lora_sha256": "2b78", "seed": "7", "encoder": "png",
                  "width": 64})");
    side.close();
    m = run_metadata(f);
    QCOMPARE(QString::fromStdString(m["lora_sha256"]), QString("2b78"));
    QCOMPARE(QString::fromStdString(m["seed"]), QString("7"));
    QVERIFY(!m.count("encoder") && m["width"] != "64");  // the written file's own, not the export's
    QVERIFY(m.count("settings"));

    // Run again of that job finds a LoRA file that is no longer what the first run read, by the SHA-256 each run's
    // output recorded.
    const auto recorded = [](const QString& folder, const QByteArray& bytes) {
      QFile out(folder + "/image.png.json");
      QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
      out.write(QJsonDocument(QJsonObject{{"lora_sha256", QString(QCryptographicHash::hash(bytes,
                                                                                          QCryptographicHash::Sha256)
                                                                     .toHex())}})
                    .toJson());
    };
    QTemporaryDir again;
    plan::JobFile then = f, now = f;
    then.job.lora = now.job.lora = "/loras/style.safetensors:0.8";
    now.job.output_file = (again.path() + "/image.png").toStdString();
    recorded(run.path(), "the bytes the run read");
    recorded(again.path(), "the bytes the run read");
    QCOMPARE(changed_loras(then, now), QStringList());
    recorded(again.path(), "trained again");
    QCOMPARE(changed_loras(then, now), QStringList{"/loras/style.safetensors"});
  }

  void trash_is_purged_when_the_studio_closes() {
    const QString data = tmp_.path() + "/library";
    QVERIFY(!QDir(data + "/trash").exists());
    MainWindow again(data);
    QCOMPARE(again.history().runs().size(), size_t(2));  // the lighthouse run (stopped) and the third
  }

  // The recent results along the bottom, seen from every tab: a finished run shows there (newest first),
  // hovering plays its frames, a click plays it in the Player.
  void recent_results_strip_plays_a_run() {
    MainWindow w(tmp_.path() + "/recent");
    w.resize(1280, 800);
    w.show();
    QVERIFY(w.recent_strip().isHidden());  // nothing to show yet
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const RunRecord boat = w.history().runs().front();
    QVERIFY(w.recent_strip().isVisible());
    QCOMPARE(w.recent_strip().count(), 1);
    QCOMPARE(w.recent_strip().item(0)->data(Qt::UserRole).toLongLong(), boat.id);

    w.compose_panel().prompt->setPlainText("a lighthouse at dusk");
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const RunRecord lighthouse = w.history().runs().front();
    QCOMPARE(w.recent_strip().count(), 2);
    QCOMPARE(w.recent_strip().item(0)->data(Qt::UserRole).toLongLong(), lighthouse.id);
    QCOMPARE(w.recent_strip().item(1)->data(Qt::UserRole).toLongLong(), boat.id);

    // Seen from another tab; hovering the older run plays its kept frames in its thumbnail.
    tabs(w)->setCurrentWidget(&w.models_view());
    QVERIFY(w.recent_strip().isVisible());
    QListWidgetItem* older = w.recent_strip().item(1);
    const QRect tile = w.recent_strip().visualItemRect(older);
    const qint64 still = older->icon().pixmap(w.recent_strip().iconSize()).cacheKey();
    QTest::mouseMove(w.recent_strip().viewport(), tile.center());
    QTRY_VERIFY_WITH_TIMEOUT(older->icon().pixmap(w.recent_strip().iconSize()).cacheKey() != still, 3000);
    shoot_sizes(&w.recent_strip(), "recent-strip");

    // A click plays it in the Player, as the History's Play does.
    QTest::mouseClick(w.recent_strip().viewport(), Qt::LeftButton, {}, tile.center());
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.player()));
    QCOMPARE(w.player().source(), boat.folder);
    QCOMPARE(w.player().frame_count(), 9);
    QVERIFY(w.player().title->text().contains("a paper boat"));

    // Deleting a run in the History takes it off the strip.
    w.history().remove(boat.id);
    QCOMPARE(w.recent_strip().count(), 1);
    w.close();
  }

  // The chart of a sweep's results: short labels, filled bars, the metric chosen.
  void sweep_chart_reads_at_a_glance() {
    MainWindow w(tmp_.path() + "/sweep");
    w.resize(1280, 800);
    w.show();
    std::vector<plan::ParallelConfig> configs(6);
    configs[0].ulysses_degree = 2;
    configs[1].ring_degree = 2;
    configs[2].ulysses_degree = 2;
    configs[2].ring_degree = 2;
    configs[3].pipefusion_parallel_degree = 2;
    configs[3].num_pipeline_patch = 2;
    configs[4].use_cfg_parallel = true;
    configs[5].data_parallel_degree = 2;
    auto* v = &w.sweep_view();
    v->start(configs);
    for (int i = 0; i < 6; ++i) {
      RunRecord r;
      r.mean_step_seconds = 0.5 + 0.1 * i;
      r.seconds = 20 - i;
      r.peak_gib = 1 + i;
      r.bytes_moved = qint64(1e6) * (10 + i);
      r.status = "done";
      v->record(i, r, true);
    }
    QCOMPARE(v->bar_labels, (QStringList{"U2", "R2", "U2xR2", "PF2x2", "CFG", "DP2"}));
    QCOMPARE(v->bar_values.front(), 0.5);
    v->metric->setCurrentIndex(1);  // total seconds
    QCOMPARE(v->bar_values.front(), 20.0);
    QVERIFY(v->chart->yAxis->label().contains("total"));
    v->metric->setCurrentIndex(2);
    QCOMPARE(v->bar_values.back(), 6.0);
    auto* bars = qobject_cast<QCPBars*>(v->chart->plottable(0));
    QVERIFY(bars && bars->brush().style() == Qt::SolidPattern);
    QCOMPARE(v->chart->yAxis->range().lower, 0.0);
    QCOMPARE(v->chart->xAxis->tickLabelRotation(), 0.0);
    v->metric->setCurrentIndex(0);
    tabs(w)->setCurrentWidget(v);
    shoot_sizes(v, "sweep");
  }
};

QTEST_MAIN(TestStudioResults)
#include "test_studio_results.moc"
