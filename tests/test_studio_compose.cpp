// The studio's left column, offscreen with the real window, worker and demo models: the first screen
// (Generate in view without scrolling, no error before anything is typed), the prompt's token count and
// the warning when some will be cut, the wheel over an unfocused field, the preset box saying "Custom",
// problems in the window's words, nothing moving as one types, refused values said, a truncated download or
// an empty folder named, other families' fields, LoRAs, and a tooltip on every setting (the parallel settings:
// test_studio_parallel; the pictures of image-to-video models: test_studio_pictures). With STUDIO_SCREENSHOTS=DIR
// it saves the compose view there at the window sizes the first screen's test checks.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QListWidget>
#include <QScrollArea>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "io/safetensors/safetensors_file.h"
#include "gui/window/main_window.h"
#include "plan/family.h"
#include "plan/field_labels.h"
#include "text/tokenize/clip_tokenizer.h"
#include "text/tokenize/t5_tokenizer.h"
#include "workers/launch/paths.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

// The labels showing text in the error colour.
QStringList red_texts(QWidget* root) {
  QStringList out;
  for (auto* l : root->findChildren<QLabel*>())
    if (l->isVisible() && !l->text().isEmpty() && (l->styleSheet() + l->text()).contains("c0392b")) out << l->text();
  return out;
}

}  // namespace

class TestStudioCompose : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio compose tests");
  }

  void the_first_screen_shows_generate_and_no_error() {
    for (const QSize size : {QSize(1280, 800), QSize(1280, 860), QSize(1920, 1080)}) {
      QSettings().clear();
      MainWindow w(tmp_.path() + "/first");
      w.resize(size);
      w.show();
      wait_for_devices(w);
      QVERIFY2(w.height() <= size.height(), qPrintable(QString::number(w.height())));
      // Generate: shown, inside the window, and in no scrolled area.
      QVERIFY(generate_button(w)->isVisible());
      const QRect g(generate_button(w)->mapTo(&w, QPoint(0, 0)), generate_button(w)->size());
      QVERIFY2(w.rect().contains(g), qPrintable(QString("%1,%2 in %3x%4").arg(g.x()).arg(g.bottom()).arg(w.width()).arg(w.height())));
      for (QWidget* p = generate_button(w); p; p = p->parentWidget()) QVERIFY(!qobject_cast<QScrollArea*>(p));
      // Nothing typed yet: no error, a grey hint, Generate off with the reason.
      QVERIFY2(red_texts(&w).isEmpty(), qPrintable(red_texts(&w).join(" | ")));
      QVERIFY(!generate_button(w)->isEnabled());
      QCOMPARE(reason(w)->text(), QString());  // the hint under the prompt says it, and Generate's tooltip
      QCOMPARE(generate_button(w)->toolTip(), QString("Write a prompt to generate"));
      QVERIFY(w.compose_panel().problems().text("prompt").contains("write a prompt"));
      QVERIFY(!w.compose_panel().problems().text("prompt").contains("--"));
      // The model folder reads whole: elided in the middle, the full path in its tooltip.
      const QString demo = QString::fromStdString(workers::demo_model_dir());
      QCOMPARE(w.compose_panel().model_edit->text(), demo);
      QCOMPARE(w.compose_panel().model_edit->toolTip(), demo);
      const QString shown = w.compose_panel().model_edit->shown_text();
      QVERIFY2(shown.endsWith("demo-model") && shown.startsWith(demo.left(3)), qPrintable(shown));
      // Ulysses and its kin wait in their collapsed group.
      QVERIFY(!w.parallel_panel().ulysses->isVisible());
      if (size == QSize(1280, 800)) shoot(&w, "compose-1280x800");
      if (size == QSize(1920, 1080)) {
        w.compose_panel().prompt->setPlainText("A paper boat drifts down a rain-soaked street at dusk, neon reflections");
        shoot(&w, "compose-1920x1080");
      }
    }
  }

  void the_prompt_counts_its_tokens_and_warns_before_a_cut() {
    MainWindow w(tmp_.path() + "/tokens");
    w.show();
    const auto t5 = text::T5Tokenizer::load(workers::demo_model_dir() + "/tokenizer");
    const QString short_prompt = "a paper boat on a pond";
    w.compose_panel().prompt->setPlainText(short_prompt);
    // The demo's transformer reads 16 text tokens: 15 of words and </s>.
    const size_t n = t5.tokenize(short_prompt.toStdString()).size();
    QVERIFY(n > 0 && n <= 15);
    QCOMPARE(w.compose_panel().prompt_tokens->text(), QString("%1 / 15 tokens").arg(n));
    QVERIFY(w.compose_panel().prompt_tokens->isVisible());
    QString long_prompt;
    while (long_prompt.size() < 2000) long_prompt += "a paper boat drifts on a pond under the rain, ";
    w.compose_panel().prompt->setPlainText(long_prompt);
    const size_t m = t5.tokenize(long_prompt.toStdString()).size();
    const QString text = w.compose_panel().prompt_tokens->text();
    QVERIFY2(text.startsWith(QString("%1 / 15 tokens").arg(m)), qPrintable(text));
    QVERIFY2(text.contains(QString("the last %1 will be ignored").arg(m - 15)), qPrintable(text));
    QVERIFY(w.compose_panel().prompt_tokens->styleSheet().contains("b9770e"));  // a warning, not an error
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    // FLUX.1: CLIP reads the prompt (77 with its start and end), T5 too while it has no prompt of its own.
    w.compose_panel().set_model_dir(QString::fromStdString(workers::demo_flux_dir()));
    const auto clip = text::ClipTokenizer::load(workers::demo_flux_dir() + "/tokenizer");
    const size_t c = clip.tokenize(long_prompt.toStdString()).size();
    const QString flux = w.compose_panel().prompt_tokens->text();
    QVERIFY2(flux.contains(QString("CLIP %1 / %2 tokens").arg(c).arg(clip.model_max_length() - 2)), qPrintable(flux));
    QVERIFY2(flux.contains("CLIP reads the first") && flux.contains("prompt for T5"), qPrintable(flux));
  }

  // The rows that come and go with the family are laid out, not only visible, in both orders: FLUX.1 chosen before
  // the window shows (a restored job), then a clip model, then FLUX.1 again. Qt 6.4's setRowVisible left FLUX.1's
  // T5 prompt at no height after a clip model had hidden it.
  void the_family_rows_are_laid_out_whatever_the_order() {
    MainWindow w(tmp_.path() + "/rows");
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(workers::demo_flux_dir()));
    w.show();
    QTRY_VERIFY(c.prompt_2->height() > 0);
    QVERIFY(!c.negative_prompt->isVisibleTo(&c) && !c.frames->isVisibleTo(&c));
    c.set_model_dir(QString::fromStdString(workers::demo_model_dir()));
    QTRY_VERIFY(c.negative_prompt->height() > 0 && c.frames->height() > 0 && c.fps->height() > 0);
    QVERIFY(!c.prompt_2->isVisibleTo(&c));
    c.set_model_dir(QString::fromStdString(workers::demo_flux_dir()));
    QTRY_VERIFY(c.prompt_2->height() > 0);
    // In the form's order: the T5 prompt's row right below the prompt's, whichever rows came back.
    auto* form = qobject_cast<QFormLayout*>(c.prompt->parentWidget()->parentWidget()->layout());
    QVERIFY(form);
    int prompt_row = -1, t5_row = -1;
    QFormLayout::ItemRole role;
    form->getWidgetPosition(c.prompt->parentWidget(), &prompt_row, &role);
    form->getWidgetPosition(c.prompt_2->parentWidget(), &t5_row, &role);
    QCOMPARE(t5_row, prompt_row + 1);
    // Back to a clip model of the family with a picture (two rows come back at once, in their order).
    c.set_model_dir(QString::fromStdString(test::golden_case("wan22_i2v_tiny")));
    int negative_row = -1, picture_row = -1, end_row = -1;
    form->getWidgetPosition(c.negative_prompt->parentWidget(), &negative_row, &role);
    form->getWidgetPosition(c.image, &picture_row, &role);
    form->getWidgetPosition(c.last_image, &end_row, &role);
    QCOMPARE(negative_row, prompt_row + 1);
    QCOMPARE(picture_row, prompt_row + 2);
    QCOMPARE(end_row, prompt_row + 3);
  }

  void the_wheel_changes_only_a_focused_field() {
    MainWindow w(tmp_.path() + "/wheel");
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.compose_panel().prompt->setFocus();
    for (QAbstractSpinBox* field :
         std::initializer_list<QAbstractSpinBox*>{w.compose_panel().steps, w.compose_panel().guidance}) {
      QCOMPARE(field->focusPolicy(), Qt::StrongFocus);
      const QString before = field->text();
      const QPoint at = field->rect().center();
      QWheelEvent wheel(at, field->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                        Qt::NoScrollPhase, false);
      QApplication::sendEvent(field, &wheel);
      QCOMPARE(field->text(), before);
    }
    const int before = w.compose_panel().seed_mode->currentIndex();
    QWheelEvent wheel(QPointF(5, 5), w.compose_panel().seed_mode->mapToGlobal(QPoint(5, 5)), QPoint(), QPoint(0, -120),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(w.compose_panel().seed_mode, &wheel);
    QCOMPARE(w.compose_panel().seed_mode->currentIndex(), before);
    // Focused (clicked or tabbed into), it takes the wheel.
    w.activateWindow();
    w.compose_panel().steps->setFocus();
    QTRY_VERIFY(w.compose_panel().steps->hasFocus());
    {
      const int steps = w.compose_panel().steps->value();
      QWheelEvent up(QPointF(5, 5), w.compose_panel().steps->mapToGlobal(QPoint(5, 5)), QPoint(), QPoint(0, 120),
                     Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(w.compose_panel().steps, &up);
      QCOMPARE(w.compose_panel().steps->value(), steps + 1);
    }
  }

  void the_preset_box_says_custom_once_a_field_differs() {
    MainWindow w(tmp_.path() + "/preset");
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat");
    QCOMPARE(w.compose_panel().preset->currentIndex(), 0);
    // By shape and seconds: the demo's 288 x 192 is 3:2, its 25 frames at 8 fps about 3 s.
    const QString first = w.compose_panel().preset->itemText(0);
    QVERIFY2(first.startsWith(QString("Landscape 3:2, %1 s").arg(25.0 / w.compose_panel().fps->value(), 0, 'g', 2)),
             qPrintable(first));
    QVERIFY2(w.compose_panel().preset->itemText(2).startsWith("Portrait 2:3"),
             qPrintable(w.compose_panel().preset->itemText(2)));
    w.compose_panel().steps->setValue(w.compose_panel().steps->value() - 2);
    QCOMPARE(w.compose_panel().preset->currentIndex(), -1);
    QCOMPARE(w.compose_panel().preset->placeholderText(), QString("Custom"));
    Q_EMIT w.compose_panel().preset->activated(2);
    QCOMPARE(w.compose_panel().preset->currentIndex(), 2);
    QCOMPARE(w.compose_panel().width->value(), 192);
    QCOMPARE(w.compose_panel().height->value(), 288);
    QCOMPARE(w.compose_panel().prompt->toPlainText(), QString("a paper boat"));  // a preset keeps the rest
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
  }

  void problems_speak_with_the_fields_labels() {
    MainWindow w(tmp_.path() + "/words");
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().height->setValue(200);
    const QString height = w.compose_panel().problems().text("height");
    QVERIFY2(height.startsWith("Height 200: must be a positive multiple of 16"), qPrintable(height));
    QVERIFY2(!height.contains("--"), qPrintable(height));
    QVERIFY2(red_texts(&w).join(" ").contains("Height 200"), qPrintable(red_texts(&w).join(" | ")));
    // The launcher keeps its flags: the plan's own message is unchanged.
    plan::JobSpec job = w.compose_panel().job();
    const auto problems = plan::validate(job, *w.compose_panel().model());
    QVERIFY(std::any_of(problems.begin(), problems.end(),
                        [](const plan::Problem& p) { return p.message.rfind("--height 200:", 0) == 0; }));
    QCOMPARE(plan::in_window_words("--width 17: use --ulysses_degree or --use_cfg_parallel; a--b"),
             std::string("Width 17: use Ulysses or CFG parallel; a--b"));
    // A problem in a closed group opens it, and appears below the group's fields.
    w.compose_panel().height->setValue(192);
    w.parallel_panel().pipefusion->setValue(3);
    QVERIFY(w.parallel_panel().isVisible());
    const QString stages = w.parallel_panel().problems().text("pipefusion_parallel_degree");
    QVERIFY2(stages.startsWith("PipeFusion stages 3: the model has 2 layers"), qPrintable(stages));
    auto* label = w.parallel_panel().findChild<QLabel*>("problems_world_size");
    QVERIFY(label && label->isVisible());
    QVERIFY(label->mapTo(&w, QPoint(0, 0)).y() > w.parallel_panel().data->mapTo(&w, QPoint(0, 0)).y());
    w.resize(1280, 800);
    w.findChild<QScrollArea*>("settings")->ensureWidgetVisible(label);
    shoot(&w, "compose-parallel-1280x800");
  }

  // Writing the prompt and the negative prompt moves no control: the hint's line and the counts' lines are kept,
  // so a click aimed at Generate or the picture field lands there.
  void typing_moves_no_control() {
    MainWindow w(tmp_.path() + "/still");
    w.resize(1280, 800);
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    const auto y = [&w](QWidget* x) { return x->mapTo(&w, QPoint(0, 0)).y(); };
    QTest::qWait(100);
    const int generate = y(generate_button(w)), picture = y(c.image);
    QVERIFY(c.problems().text("prompt").contains("write a prompt"));  // the hint is there
    QTest::keyClicks(c.prompt, "a paper boat");
    QTest::keyClicks(c.negative_prompt, "blurry");
    QTest::qWait(100);
    QCOMPARE(c.problems().text("prompt"), QString());  // and gone
    QVERIFY(!c.negative_tokens->text().isEmpty());   // the negative prompt's count came
    QCOMPARE(y(generate_button(w)), generate);
    QCOMPARE(y(c.image), picture);
    c.prompt->clear();
    c.negative_prompt->clear();
    QTest::qWait(100);
    QCOMPARE(y(generate_button(w)), generate);
    QCOMPARE(y(c.image), picture);
  }

  // A value a field cannot take (Steps 0) is put back, and it says so below the field until the next edit.
  void a_refused_value_is_said_not_silently_put_back() {
    MainWindow w(tmp_.path() + "/revert");
    w.show();
    auto* steps = w.compose_panel().steps;
    const int before = steps->value();
    steps->setFocus();
    steps->selectAll();
    QTest::keyClicks(steps, "0");
    QTest::keyClick(steps, Qt::Key_Return);
    QCOMPARE(steps->value(), before);
    const QString said = w.compose_panel().problems().text("num_inference_steps");
    QVERIFY2(said.contains("0: not taken") && said.contains("1 to 1000") &&
                 said.contains(QString("it stays %1").arg(before)),
             qPrintable(said));
    QTest::keyClicks(steps, "5");  // the next edit: it has said its piece
    QCOMPARE(w.compose_panel().problems().text("num_inference_steps"), QString());
  }

  // A model folder with a weight file cut short is refused as it is chosen, naming the file from the headers;
  // an empty folder is told what a model folder is and where to get one.
  void a_cut_short_weight_file_is_named_when_the_folder_is_chosen() {
    const std::string dir = (tmp_.path() + "/cut").toStdString();
    test::copy_tree(test::golden_case("cogvx2b_tiny"), dir);
    const std::string file = dir + "/transformer/diffusion_pytorch_model.safetensors";
    std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
    MainWindow w(tmp_.path() + "/cut-state");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().set_model_dir(QString::fromStdString(dir));
    QVERIFY(!w.compose_panel().model());
    const QString said = w.compose_panel().problems().text("model");
    QVERIFY2(said.contains("transformer/diffusion_pytorch_model.safetensors: truncated") &&
                 said.contains("its header describes"),
             qPrintable(said));
    QVERIFY(!generate_button(w)->isEnabled());
    std::filesystem::create_directories(dir + "-empty");
    w.compose_panel().set_model_dir(QString::fromStdString(dir + "-empty"));
    const QString empty = w.compose_panel().problems().text("model");
    QVERIFY2(empty.contains("not a model folder") && empty.contains("Models tab"), qPrintable(empty));
  }

  // HunyuanVideo-1.5's folder in the compose column: its fields (frames, negative prompt; no T5 prompt), its
  // defaults (848 x 480, 121 frames, the guider's 6), Generate on; what it refuses is said by field.
  void a_hunyuan_video_15_folder_is_composed() {
    MainWindow w(tmp_.path() + "/hunyuan");
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(test::golden_case("hunyuan15_tiny")));
    QVERIFY2(c.model(), qPrintable(c.model_error()));
    c.prompt->setPlainText("a neon sign that reads \"OPEN\"");
    QVERIFY(c.frames->isVisibleTo(&c));
    QVERIFY(c.negative_prompt->isVisibleTo(&c));
    QVERIFY(!c.prompt_2->isVisibleTo(&c));
    plan::JobSpec filled;  // the family's defaults, as the pipeline has them
    plan::apply_model_defaults(filled, *c.model());
    QCOMPARE(filled.width, 848);
    QCOMPARE(filled.height, 480);
    QCOMPARE(filled.num_frames, 121);
    QCOMPARE(filled.guidance_scale, 6.0);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    // Its presets: the 720p checkpoints' size beside the folder's 480p default.
    QStringList presets;
    for (int i = 0; i < c.preset->count(); ++i) presets << c.preset->itemText(i);
    QVERIFY2(presets.filter("1280 x 720").size() == 1 && presets.filter("848 x 480").size() >= 1,
             qPrintable(presets.join(" | ")));
    c.frames->setValue(10);
    QVERIFY2(c.problems().text("num_frames").contains("4k+1"), qPrintable(c.problems().text("num_frames")));
  }

  // LoRAs: a row per file with its strength, in the job as --lora takes them and back; a file kohya trained offers
  // its most trained words for the prompt; one that cannot be read is a problem under the list; the second
  // expert's list shows for Wan2.2 only.
  void loras_are_listed_with_strengths() {
    MainWindow w(tmp_.path() + "/loras");
    w.show();
    wait_for_devices(w);
    auto& c = w.compose_panel();
    c.set_model_dir(QString::fromStdString(test::golden_case("flux_words_tiny")));
    c.prompt->setPlainText("a lighthouse");
    QVERIFY(c.loras->isVisibleTo(&c));
    QVERIFY(!c.loras_2->isVisibleTo(&c));
    const std::string kohya = test::golden_case("flux_lora_tiny") + "/lora_kohya.safetensors";
    c.loras->add(QString::fromStdString(kohya), 0.8);
    QCOMPARE(c.job().lora, kohya + ":0.8");
    c.loras->strength(0)->setValue(1.25);
    QCOMPARE(c.job().lora, kohya + ":1.25");
    QVERIFY(!c.loras->triggers(0)->isVisible());  // trained without tags: no words to offer
    QCOMPARE(c.problems().text("lora"), QString());

    const float zero = 0;
    const std::string tagged = tmp_.path().toStdString() + "/pixel_style.safetensors";
    io::write_safetensors(tagged, {{"lora_unet_x.lora_down.weight", io::DType::F32, {1}, &zero}},
                          {{"ss_tag_frequency", R"({"10_pxl": {"pxlart": 12, "pixel art": 30, "sprite": 3}})"},
                           {"modelspec.trigger_phrase", "in the pxl style"}});
    c.loras->add(QString::fromStdString(tagged));
    QCOMPARE(c.job().lora, kohya + ":1.25," + tagged + ":1");
    const QString words = c.loras->triggers(1)->text();
    // The phrase its maker names first, then the most trained words.
    const int phrase = words.indexOf("in the pxl style");
    QVERIFY2(phrase >= 0 && phrase < words.indexOf("pixel art") &&
                 words.indexOf("pixel art") < words.indexOf("pxlart") && words.contains("sprite"),
             qPrintable(words));
    Q_EMIT c.loras->triggers(1)->linkActivated("pixel art");
    QCOMPARE(c.prompt->toPlainText(), QString("a lighthouse, pixel art"));

    c.loras->add(tmp_.path() + "/a,b.safetensors");  // the list is comma-separated: refused, saying why
    QCOMPARE(c.loras->count(), 2);
    QVERIFY2(c.loras->refused()->text().contains("comma"), qPrintable(c.loras->refused()->text()));
    // The same file twice may be listed (two strengths to switch between), but not applied twice.
    c.loras->add(QString::fromStdString(kohya), 0.5);
    QCOMPARE(c.loras->count(), 3);
    QVERIFY2(c.problems().text("lora").contains("given twice"), qPrintable(c.problems().text("lora")));
    c.loras->enabled(2)->setChecked(false);
    QCOMPARE(c.problems().text("lora"), QString());
    c.loras->remove(2);
    c.loras->add(tmp_.path() + "/missing.safetensors");
    QVERIFY(!c.loras->refused()->isVisibleTo(&c));
    QVERIFY2(c.problems().text("lora").contains("cannot be read"), qPrintable(c.problems().text("lora")));
    c.loras->remove(2);
    QCOMPARE(c.problems().text("lora"), QString());
    // The model's own weights chosen as a LoRA: refused before Generate, not by a rank after it.
    const std::string weights = test::golden_case("flux_words_tiny") + "/transformer/diffusion_pytorch_model.safetensors";
    c.loras->add(QString::fromStdString(weights));
    const auto said = w.validate();
    QVERIFY(std::any_of(said.begin(), said.end(), [](const plan::Problem& p) {
      return p.field == "lora" && p.message.find("is not a LoRA weight") != std::string::npos;
    }));
    QVERIFY(!generate_button(w)->isEnabled());
    c.loras->remove(2);
    c.loras->enabled(0)->setChecked(false);  // kept in the list, not applied
    QCOMPARE(c.job().lora, tagged + ":1");
    QCOMPARE(c.loras->count(), 2);
    c.loras->enabled(0)->setChecked(true);
    c.loras->remove(0);
    QCOMPARE(c.job().lora, tagged + ":1");

    // A job's list comes back as rows (a history entry, a sweep); the second expert's list shows for Wan2.2.
    c.set_model_dir(QString::fromStdString(test::golden_case("wan22_tiny")));
    QVERIFY(c.loras_2->isVisibleTo(&c));
    auto j = c.job();
    j.lora = kohya + ":0.5," + tagged;
    j.lora_2 = tagged + ":-0.25";
    c.set_job(j);
    QCOMPARE(c.loras->count(), 2);
    QCOMPARE(c.loras->strength(0)->value(), 0.5);
    QCOMPARE(c.loras->strength(1)->value(), 1.0);
    QCOMPARE(c.loras_2->strength(0)->value(), -0.25);
    QCOMPARE(c.job().lora_2, tagged + ":-0.25");
  }

  void every_setting_has_a_tooltip() {
    MainWindow w(tmp_.path() + "/tips");
    w.show();
    QStringList missing;
    int settings = 0;
    const QWidget* queue = queue_list(w);
    for (QWidget* f : w.compose_panel().findChildren<QWidget*>()) {
      const bool inner = qobject_cast<QAbstractSpinBox*>(f->parentWidget()) || qobject_cast<QComboBox*>(f->parentWidget());
      const bool setting = qobject_cast<QAbstractSpinBox*>(f) || qobject_cast<QComboBox*>(f) ||
                           qobject_cast<QCheckBox*>(f) || qobject_cast<QPlainTextEdit*>(f) ||
                           (qobject_cast<QLineEdit*>(f) && !inner) || (qobject_cast<QListWidget*>(f) && f != queue);
      if (!setting) continue;
      ++settings;
      if (f->toolTip().isEmpty()) missing << f->objectName() + " (" + f->metaObject()->className() + ")";
    }
    QVERIFY2(settings >= 25, qPrintable(QString::number(settings)));
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(", ")));
    const ParallelPanel& parallel = w.parallel_panel();
    for (QWidget* f : std::initializer_list<QWidget*>{parallel.ulysses, parallel.ring, parallel.patches,
                                                     parallel.warmup, parallel.cfg, parallel.data,
                                                     parallel.parallel_vae, w.compose_panel().vae_tiling,
                                                     w.compose_panel().seed})
      QVERIFY2(f->toolTip().size() > 60, qPrintable(f->objectName() + ": " + f->toolTip()));
  }
};

QTEST_MAIN(TestStudioCompose)
#include "test_studio_compose.moc"
