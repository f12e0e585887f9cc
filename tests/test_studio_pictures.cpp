// The compose column's pictures for image-to-video models, offscreen with the real window: the thumbnail as the
// model will see the picture (stretched, or cropped to HunyuanVideo-1.5's bucket), "Match the picture's shape",
// files the run would refuse named before Generate, a phone's EXIF orientation, the end picture, the offer of a
// family's image-to-video models for a text-to-video one, a picture changed on disk shown again; and a run's pictures
// kept with it: read when the job is queued, shown beside the result, named in exports, read again by Run again.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <cmath>

#include <QCryptographicHash>
#include <QImage>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <filesystem>

#include "gui/compose/picture_field.h"
#include "gui/models/models_view.h"
#include "gui/window/main_window.h"
#include "plan/job_file.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

class TestStudioPictures : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() { start_studio_suite("DiT Studio picture tests"); }

  // HunyuanVideo-1.5 image-to-video sizes the video by its picture, as its pipeline does (the aspect-ratio
  // bucket: 112 x 56 makes 80 x 48 at this case's target size), and the thumbnail shows the crop it will see.
  void a_hunyuan_picture_sizes_the_video_and_is_cropped() {
    MainWindow w(tmp_.path() + "/hunyuan-i2v");
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(test::golden_case("hunyuan15_i2v_tiny")));
    QVERIFY2(c.model(), qPrintable(c.model_error()));
    c.prompt->setPlainText("the lighthouse beam sweeps over the waves");
    QVERIFY(c.image->isVisibleTo(&c));
    c.image->set_path(QString::fromStdString(test::golden_case("hunyuan15_i2v_tiny") + "/image.png"));
    QCOMPARE(c.width->value(), 80);
    QCOMPARE(c.height->value(), 48);
    QCOMPARE(c.job().width, 80);
    QCOMPARE(c.image->thumbnail->pixmap().width(), 160);  // 96 high, the output's 5:3
    QVERIFY2(c.image->note->text().contains("112 x 56, scaled to cover the output's 80 x 48 and cropped"),
             qPrintable(c.image->note->text()));
    shoot_sizes_showing(&w, c.image, "compose-picture-crop");
    QCOMPARE(c.problems().text("image"), QString());
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    // The size stays the user's to change; a Wan model stretches its picture instead.
    c.width->setValue(96);
    QCOMPARE(c.job().width, 96);
    c.set_model_dir(QString::fromStdString(test::golden_case("wan21_i2v_tiny")));
    QVERIFY2(c.image->note->text().contains("stretched"), qPrintable(c.image->note->text()));
    // A large photo: its own size in the note and the job's shape, the thumbnail drawn from a small copy of it
    // (every step of the size redraws it).
    QImage large(2400, 1200, QImage::Format_RGB32);
    large.fill(Qt::darkCyan);
    const QString photo = tmp_.path() + "/large.png";
    QVERIFY(large.save(photo));
    c.image->set_path(photo);
    QVERIFY2(c.image->note->text().startsWith("2400 x 1200"), qPrintable(c.image->note->text()));
    QCOMPARE(c.image->picture_size(), QSize(2400, 1200));
    QCOMPARE(c.image->thumbnail->pixmap().height(), 96);
    QCOMPARE(c.image->thumbnail->pixmap().width(), int(std::lround(96.0 * c.width->value() / c.height->value())));
    QCOMPARE(c.image->thumbnail->pixmap().toImage().pixelColor(10, 10), QColor(Qt::darkCyan));
  }

  // An image-to-video model asks for its picture, shows it as the model will see it (stretched to the output
  // size), and puts it in the job; a text-to-video model hides the field and takes none.
  void image_to_video_takes_a_picture() {
    MainWindow w(tmp_.path() + "/pictures");
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(test::golden_case("wan21_i2v_tiny")));
    c.prompt->setPlainText("a cat turns its head");
    QVERIFY(c.image->isVisibleTo(&c));
    QVERIFY(!c.last_image->isVisibleTo(&c));  // Wan2.1 I2V cannot end on a picture
    const QString missing = c.problems().text("image");
    QVERIFY2(missing.contains("image-to-video") && !missing.contains("--"), qPrintable(missing));
    const QString picture = QString::fromStdString(test::golden_case("wan21_i2v_tiny") + "/image.png");
    c.image->set_path(picture);
    QCOMPARE(c.problems().text("image"), QString());
    QCOMPARE(c.job().image_file, picture.toStdString());
    // The model's default 832 x 480 stretches the 96 x 64 picture: the thumbnail has the output's shape.
    QCOMPARE(c.image->thumbnail->pixmap().height(), 96);
    QCOMPARE(c.image->thumbnail->pixmap().width(), 166);
    QVERIFY2(c.image->note->text().contains("96 x 64, stretched"), qPrintable(c.image->note->text()));
    // One click gives an output of the picture's 3:2 in about the same pixels, in Wan's 16-pixel steps (diffusers'
    // example: round(sqrt(832 * 480 * 1.5)) // 16 * 16 = 768 and round(sqrt(832 * 480 / 1.5)) // 16 * 16 = 512).
    QVERIFY(c.image->match_shape->isVisibleTo(&c));
    c.image->match_shape->click();
    QCOMPARE(c.width->value(), 768);
    QCOMPARE(c.height->value(), 512);
    QVERIFY2(c.image->note->text().startsWith("96 x 64, resized to 768 x 512"), qPrintable(c.image->note->text()));
    QVERIFY(!c.image->match_shape->isVisibleTo(&c));
    c.width->setValue(96);
    c.height->setValue(64);
    QCOMPARE(c.image->thumbnail->pixmap().width(), 144);
    QCOMPARE(c.image->note->text(), QString("96 x 64"));
    // A file the run would refuse is named under the field, in the engine's words, before Generate.
    const QString pictures = QString::fromStdString(std::string(test::source_dir()) + "/tests/data/pictures/");
    for (const auto& [file, why] : {std::pair{"refused_not_a_picture.png", "not a picture"},
                                   std::pair{"refused_animated.webp", "animated"}, std::pair{"refused_cmyk.jpg", "CMYK"},
                                   std::pair{"refused_16bit.png", "16 bits"}}) {
      c.image->set_path(pictures + file);
      QVERIFY2(c.image->thumbnail->text().startsWith("Cannot show this file"), qPrintable(c.image->thumbnail->text()));
      QVERIFY2(c.problems().text("image").contains(why), qPrintable(file + (": " + c.problems().text("image"))));
      QVERIFY(!w.generate());
    }
    // A phone's portrait (its pixels sideways, EXIF orientation 6) is shown and sized upright, as the run reads it.
    c.image->set_path(pictures + "exif_6.jpg");
    QCOMPARE(c.problems().text("image"), QString());
    QCOMPARE(c.image->picture_size(), QSize(64, 96));
    // Wan2.2 I2V can end on a picture; a text-to-video model takes none.
    c.set_model_dir(QString::fromStdString(test::golden_case("wan22_i2v_tiny")));
    QVERIFY(c.last_image->isVisibleTo(&c));
    // The end picture does not size the output: it offers no match; nor does a model of one size (CogVideoX-5B-I2V's
    // learned positions, of one size in this tiny one too).
    const QString narrow = QString::fromStdString(std::string(test::source_dir()) + "/tests/data/pictures/bicubic_37x80.png");
    c.last_image->set_path(narrow);
    QVERIFY2(c.last_image->note->text().contains("stretched"), qPrintable(c.last_image->note->text()));
    QVERIFY(!c.last_image->match_shape->isVisibleTo(&c));
    c.last_image->set_path({});
    c.set_model_dir(QString::fromStdString(test::golden_case("cogvx5b_i2v_tiny")));
    c.image->set_path(narrow);
    QVERIFY2(c.image->note->text().contains("stretched"), qPrintable(c.image->note->text()));
    QVERIFY(!c.image->match_shape->isVisibleTo(&c));
    // A text-to-video model of the family points to its image-to-video models; a picture given to it is
    // named as a problem, and a link shows the model in the Models tab.
    c.image->set_path(picture);
    c.set_model_dir(QString::fromStdString(test::golden_case("wan21_tiny")));
    QVERIFY(c.image->isVisibleTo(&c));
    QVERIFY(c.image->offer->isVisibleTo(&c));
    QVERIFY2(c.image->offer->text().contains("Wan2.1-I2V-14B-480P") && c.image->offer->text().contains("Wan2.2-I2V-A14B"),
             qPrintable(c.image->offer->text()));
    QCOMPARE(c.job().image_file, picture.toStdString());
    const QString words_only = c.problems().text("image");
    QVERIFY2(words_only.contains("from words alone") && words_only.contains("Wan-AI/Wan2.1-I2V-14B-480P-Diffusers"),
             qPrintable(words_only));
    // The field's clear button takes the picture away, and the problem with it.
    auto* clear = c.image->edit->findChild<QToolButton*>();  // Qt's clear button inside the line edit
    QVERIFY(clear);
    clear->click();
    QCOMPARE(c.job().image_file, std::string());
    QCOMPARE(c.problems().text("image"), QString());
    c.image->set_path(picture);
    Q_EMIT c.image->offer->linkActivated("Wan-AI/Wan2.1-I2V-14B-720P-Diffusers");
    auto* models = w.findChild<ModelsView*>();
    QCOMPARE(w.findChild<QTabWidget*>("tabs")->currentWidget(), models);
    QCOMPARE(models->known_table->item(models->known_table->currentRow(), 2)->text(),
             QString("Wan-AI/Wan2.1-I2V-14B-720P-Diffusers"));
    // A family with no image-to-video model shows no picture field, and the job has none.
    c.set_model_dir(QString::fromStdString(test::golden_case("flux_words_tiny")));
    QVERIFY(!c.image->isVisibleTo(&c));
    QCOMPARE(c.job().image_file, std::string());
  }

  // A picture edited in another program after it was chosen (rewritten in place, or replaced by a new file of
  // the same name, as editors save) is read again: its thumbnail and size follow the file on disk.
  void a_picture_changed_on_disk_is_shown_again() {
    PictureField field("image");
    field.set_output_size(96, 64);
    const QString file = tmp_.path() + "/changing.png";
    QImage(96, 64, QImage::Format_RGB888).save(file);
    field.set_path(file);
    QCOMPARE(field.picture_size(), QSize(96, 64));
    QSignalSpy changed(&field, &PictureField::changed), reread(&field, &PictureField::reread);
    QImage(40, 80, QImage::Format_RGB888).save(file);  // in place
    QTRY_COMPARE(field.picture_size(), QSize(40, 80));
    QVERIFY(changed.count() >= 1);
    // Another file of the folder changes nothing.
    QTest::qWait(200);
    const int before_other = int(changed.count() + reread.count());
    const QString saved = tmp_.path() + "/saved-elsewhere.png";
    QImage(50, 30, QImage::Format_RGB888).save(saved);
    QTest::qWait(300);
    QCOMPARE(int(changed.count() + reread.count()), before_other);
    QCOMPARE(field.picture_size(), QSize(40, 80));
    std::filesystem::rename(saved.toStdString(), file.toStdString());  // replaced: a new file at the path
    QTRY_COMPARE(field.picture_size(), QSize(50, 30));
    QImage(64, 64, QImage::Format_RGB888).save(file);  // and watched still
    QTRY_COMPARE(field.picture_size(), QSize(64, 64));
    // Saved again at the same size (a retouch): read again, said as such, the output's size left alone.
    const int changes = int(changed.count());
    QImage retouched(64, 64, QImage::Format_RGB888);
    retouched.fill(Qt::red);
    retouched.save(file);
    QTRY_VERIFY(reread.count() >= 1);
    QCOMPARE(int(changed.count()), changes);
  }

  // An image-to-video run keeps its picture: a copy in the run's folder, which the run read and the history's
  // settings name, so a re-run or an export holds whatever becomes of the original.
  void an_image_to_video_run_keeps_its_picture() {
    MainWindow w(tmp_.path() + "/kept-pictures");
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(test::golden_case("wan22_i2v_tiny")));
    c.prompt->setPlainText("A kite rises above the field");
    c.width->setValue(96);
    c.height->setValue(64);
    c.frames->setValue(9);
    c.steps->setValue(2);
    const QString original = tmp_.path() + "/start.png";
    QVERIFY(QFile::copy(QString::fromStdString(test::golden_case("wan22_i2v_tiny") + "/image.png"), original));
    QFile as_queued_file(original);
    QVERIFY(as_queued_file.open(QIODevice::ReadOnly));
    const QByteArray as_queued = as_queued_file.readAll();
    as_queued_file.close();
    c.image->set_path(original);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    // Two jobs: the second waits in the queue while the picture changes on disk, and runs with it as it was queued.
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QImage changed(96, 64, QImage::Format_RGB32);
    changed.fill(Qt::red);
    QVERIFY(changed.save(original));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const auto run = w.history().runs().front();
    const QString kept = run.folder + "/input.png";
    QFile a(kept);
    QVERIFY(a.open(QIODevice::ReadOnly));
    QVERIFY(a.readAll() == as_queued);
    // Its record names the file the user chose; the run read the copy.
    const auto settings = plan::job_file_from_json(run.settings.toStdString(), "the run's settings");
    QCOMPARE(QString::fromStdString(settings.job.image_file), original);
    // The player shows the result beside the picture it started from, at the player's input width.
    tabs(w)->setCurrentWidget(&w.history());
    w.history().select({run.id});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QVERIFY(w.player().input->isVisibleTo(&w.player()));
    QCOMPARE(w.player().input->pixmap().width(), 160);
    QCOMPARE(w.player().input->pixmap().height(), 107);
    QCOMPARE(w.player().frame_count(), 9);
    QVERIFY2(w.player().input->toolTip().contains(original), qPrintable(w.player().input->toolTip()));
    // Its export names the user's file, with the size and SHA-256 of what the run read, as the worker wrote them.
    QString error;
    const QString clip = tmp_.path() + "/kite.mp4";
    QVERIFY2(export_as(w.player(), clip, &error) == clip, qPrintable(error));
    // Into a folder that is not there: said in the window's words (its path, not the command line's flag).
    QVERIFY(export_as(w.player(), tmp_.path() + "/no-such-folder/kite.mp4", &error).isEmpty());
    QVERIFY2(error.startsWith(tmp_.path() + "/no-such-folder/kite.mp4: ") && !error.contains("--"), qPrintable(error));
    QVERIFY2(w.player().note->text().startsWith("Export failed: "), qPrintable(w.player().note->text()));
    QFile sidecar(clip + ".json");  // every setting, as the clip's tags have them
    QVERIFY(sidecar.open(QIODevice::ReadOnly));
    const auto tags = nlohmann::json::parse(sidecar.readAll().toStdString());
    QCOMPARE(QString::fromStdString(tags.value("image_sha256", "")),
             QString(QCryptographicHash::hash(as_queued, QCryptographicHash::Sha256).toHex()));
    QCOMPARE(QString::fromStdString(tags.value("image", "")), original);
    QVERIFY2(QString::fromStdString(tags.value("image_size", "")).contains('x'), tags.dump().c_str());
    // Open its settings: the user's file while it is there, the kept copy once it is gone.
    c.image->set_path({});
    w.history().reopen_button->click();
    QCOMPARE(c.image->path(), original);
    QVERIFY(QFile::remove(original));
    w.history().reopen_button->click();
    QCOMPARE(c.image->path(), kept);
    // Run again reads what the run read.
    w.history().rerun_button->click();
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const auto again = w.history().runs().front();
    QVERIFY(again.id != run.id);
    QFile again_kept(again.folder + "/input.png");
    QVERIFY(again_kept.open(QIODevice::ReadOnly));
    QVERIFY(again_kept.readAll() == as_queued);
    // Deleted in the History while the Player shows it: the Player lets it go, saying so.
    QCOMPARE(w.player().source(), again.folder);
    QVERIFY(w.history().remove(again.id));
    QCOMPARE(w.player().source(), QString());
    QCOMPARE(w.player().frame_count(), 0);
    QVERIFY2(w.player().title->text().contains("was deleted"), qPrintable(w.player().title->text()));
    // A run from words alone hides it.
    w.player().begin(run.folder, plan::JobFile{}, "words");
    QVERIFY(!w.player().input->isVisibleTo(&w.player()));
  }
};

QTEST_MAIN(TestStudioPictures)
#include "test_studio_pictures.moc"
