// The studio's session, offscreen with real workers: Esc and closing ask before a run is thrown away, the Stop
// question follows the run and goes when it ends, and the settings come back after a restart (every compose
// field, the session's seed mode, Oversubscribe and the LoRAs switched off).
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <map>

#include "gui/widgets/collapsible.h"
#include "gui/window/main_window.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

class TestStudioSession : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio session tests");
  }

  void esc_and_closing_ask_before_throwing_a_run_away() {
    const QString data = tmp_.path() + "/stop";
    bool asked = false;
    {
      MainWindow w(data);
      w.show();
      QVERIFY(QTest::qWaitForWindowActive(&w));
      w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
      w.compose_panel().steps->setValue(1000);  // still denoising when it is stopped, however fast the machine
      QSignalSpy spy(&w, &MainWindow::run_finished);
      QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
      QTRY_VERIFY_WITH_TIMEOUT(w.run_view().bars.at(0)->value() >= 4, 120000);  // past its first steps
      // Esc while typing in a field is the field's, not the run's.
      w.compose_panel().prompt->setFocus();
      QTest::keyClick(w.compose_panel().prompt, Qt::Key_Escape);
      QTest::qWait(300);
      QVERIFY(w.running());
      // In the run view it asks; "Keep running" keeps it running.
      w.run_view().setFocus();
      answer_next("confirm_stop", QMessageBox::No, &asked);
      QTest::keyClick(&w.run_view(), Qt::Key_Escape);
      QVERIFY(asked);
      QTest::qWait(300);
      QVERIFY(w.running());
      // Closing asks too; stopping waits for the run to be recorded, then closes.
      answer_next("confirm_stop", QMessageBox::Yes, &asked);
      QVERIFY(!w.close());
      QVERIFY(asked);
      QVERIFY(w.isVisible());
      QCOMPARE(wait_for_run(spy, 60000), 130);
      QTRY_VERIFY_WITH_TIMEOUT(!w.isVisible(), 5000);
    }
    MainWindow again(data);
    const auto runs = again.history().runs();
    QCOMPARE(int(runs.size()), 1);
    QCOMPARE(runs.front().status, QString("interrupted"));
    QCOMPARE(runs.front().prompt, QString("a paper boat drifts on a pond"));
    // Stopped before decoding, it made no file: no empty folder is left behind.
    QVERIFY(runs.front().folder.isEmpty());
    QCOMPARE(QDir(data + "/runs").entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList());
  }

  void settings_persist_between_sessions() {
    const std::string kohya = test::golden_case("flux_lora_tiny") + "/lora_kohya.safetensors";
    {
      MainWindow w(tmp_.path() + "/p");
      w.compose_panel().prompt->setPlainText("a lighthouse at dusk");
      w.compose_panel().steps->setValue(7);
      w.compose_panel().seed_mode->setCurrentIndex(1);  // random each run
      w.parallel_panel().ring->setValue(2);
      w.parallel_panel().oversubscribe->setChecked(true);
      w.compose_panel().loras->add(QString::fromStdString(kohya), 0.5);
      w.compose_panel().loras->add(QString::fromStdString(kohya), 0.7);
      w.compose_panel().loras->enabled(1)->setChecked(false);  // kept in the list, left out of the job
      w.close();
    }
    MainWindow again(tmp_.path() + "/p");
    QCOMPARE(again.compose_panel().prompt->toPlainText(), QString("a lighthouse at dusk"));
    QCOMPARE(again.compose_panel().steps->value(), 7);
    QCOMPARE(again.compose_panel().seed_mode->currentIndex(), 1);
    QCOMPARE(again.parallel_panel().ring->value(), 2);
    QVERIFY(again.parallel_panel().oversubscribe->isChecked());
    QCOMPARE(again.compose_panel().loras->count(), 2);  // the one switched off too, still off
    QVERIFY(!again.compose_panel().loras->enabled(1)->isChecked());
    QCOMPARE(again.compose_panel().job().lora, kohya + ":0.5");
    QSettings().clear();  // the other tests start from the defaults
  }

  // Every setting of the compose column comes back after a restart: each field shown for the demo model, every
  // group open, given a value other than its own, the window closed and opened again, each compared.
  void every_compose_setting_comes_back_after_a_restart() {
    const QString data = tmp_.path() + "/every";
    const auto value_of = [](QWidget* x) -> QString {
      if (auto* s = qobject_cast<QSpinBox*>(x)) return QString::number(s->value());
      if (auto* d = qobject_cast<QDoubleSpinBox*>(x)) return QString::number(d->value());
      if (auto* c = qobject_cast<QCheckBox*>(x)) return c->isChecked() ? "on" : "off";
      if (auto* c = qobject_cast<QComboBox*>(x)) return c->currentText();
      if (auto* l = qobject_cast<QLineEdit*>(x)) return l->text();
      if (auto* p = qobject_cast<QPlainTextEdit*>(x)) return p->toPlainText();
      return QString();
    };
    // Derived from the others, or a path whose change would read another model; Qt's own parts (qt_...).
    const QSet<QString> derived{"model", "preset"};
    const auto ours = [&derived](QWidget* x) {
      const QString name = x->objectName();
      return !name.isEmpty() && !name.startsWith("qt_") && !derived.contains(name);
    };
    std::map<QString, QString> given;
    {
      MainWindow w(data);
      w.show();
      auto& c = w.compose_panel();
      for (auto* g : c.findChildren<Collapsible*>()) g->set_open(true);
      for (QWidget* x : c.findChildren<QWidget*>()) {
        const QString name = x->objectName();
        if (!ours(x) || !x->isVisibleTo(&c) || !x->isEnabled()) continue;
        if (auto* s = qobject_cast<QSpinBox*>(x)) s->setValue(s->value() < s->maximum() ? s->value() + s->singleStep() : s->minimum());
        else if (auto* d = qobject_cast<QDoubleSpinBox*>(x))
          d->setValue(d->value() < d->maximum() ? d->value() + d->singleStep() : d->minimum());
        else if (auto* b = qobject_cast<QCheckBox*>(x)) b->setChecked(!b->isChecked());
        else if (auto* k = qobject_cast<QComboBox*>(x); k && k->count() > 1) k->setCurrentIndex((k->currentIndex() + 1) % k->count());
        else if (auto* t = qobject_cast<QPlainTextEdit*>(x)) t->setPlainText("a lighthouse at dusk, " + name);
        else if (auto* l = qobject_cast<QLineEdit*>(x); l && !l->isReadOnly() && name.contains("prompt")) l->setText(name + " words");
      }
      // What each field holds once all are set (one can bound another).
      for (QWidget* x : c.findChildren<QWidget*>())
        if (ours(x) && x->isVisibleTo(&c) && !value_of(x).isNull())
          given[x->objectName()] = value_of(x);
      QVERIFY(given.size() >= 15);
      w.close();
    }
    MainWindow again(data);
    QStringList lost;
    for (const auto& [name, value] : given) {
      auto* x = again.compose_panel().findChild<QWidget*>(name);
      if (!x || value_of(x) != value) lost << QString("%1: %2, came back as %3").arg(name, value, x ? value_of(x) : "missing");
    }
    QVERIFY2(lost.isEmpty(), qPrintable(lost.join("; ")));
    QSettings().clear();
  }

  // The Stop question counts the steps as the run goes on, and goes away by itself when the run ends meanwhile.
  void the_stop_question_follows_the_run_and_goes_when_it_ends() {
    MainWindow w(tmp_.path() + "/ask");
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(200);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QTRY_VERIFY_WITH_TIMEOUT(w.run_view().bars.at(0)->value() >= 1, 120000);
    QStringList seen;
    QTimer watch;
    QObject::connect(&watch, &QTimer::timeout, &watch, [&seen] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (box && box->objectName() == "confirm_stop" && (seen.isEmpty() || seen.back() != box->text())) seen << box->text();
    });
    watch.start(50);
    w.run_view().setFocus();
    QTest::keyClick(&w.run_view(), Qt::Key_Escape);  // asks; nobody answers, and this returns once it is gone
    QCOMPARE(wait_for_run(spy, 120000), 0);  // it ran to its end: not stopped
    QVERIFY2(seen.size() >= 2, qPrintable(seen.join(" | ")));  // the count moved while it was open
    QVERIFY(!QApplication::activeModalWidget());
  }

};

QTEST_MAIN(TestStudioSession)
#include "test_studio_session.moc"
