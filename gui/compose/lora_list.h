// The compose column's LoRAs for one transformer (--lora, or --lora_2 for Wan2.2's second expert): a row per
// file with its strength (a slider from -2 to 2 and a number that goes further), each switched on or off
// (off: kept in the list, left out of the job) and removable, added with
// "Add LoRA..." or by dropping .safetensors files on the list. Under a file trained with kohya's scripts, the
// words it was trained on most (its ss_tag_frequency metadata), each a link that adds it to the prompt. The
// value is the job's list (plan/lora_choice.h); whether each file can be used is the plan's to say.
#pragma once
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>
#include <QWidget>

#include <string>
#include <vector>

namespace studio::gui {

class LoraList : public QWidget {
  Q_OBJECT
 public:
  // `field`: "lora" or "lora_2", the list's object name (its problems are shown under it by that name).
  explicit LoraList(const char* field, QWidget* parent = nullptr);
  // The job's list: "FILE:STRENGTH" entries joined by commas, "" for none.
  std::string value() const;
  void set_value(const std::string& list);
  // The rows switched off, as a list like value()'s (a session keeps them: they are not in the job), and
  // those rows added back, switched off.
  std::string switched_off() const;
  void add_switched_off(const std::string& list);
  void add(const QString& file, double strength = 1.0);
  int count() const { return int(rows_.size()); }
  QDoubleSpinBox* strength(int row) const { return rows_.at(size_t(row)).strength; }
  QLabel* triggers(int row) const { return rows_.at(size_t(row)).triggers; }
  QCheckBox* enabled(int row) const { return rows_.at(size_t(row)).enabled; }
  void remove(int row);
  QLabel* refused() const { return refused_; }

  QPushButton* add_button;

 Q_SIGNALS:
  void changed();
  void trigger_chosen(const QString& words);  // a trained word the user clicked, for the prompt

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  struct Row {
    QWidget* box = nullptr;
    QString file;
    QCheckBox* enabled = nullptr;
    QSlider* slider = nullptr;
    QDoubleSpinBox* strength = nullptr;
    QLabel* triggers = nullptr;  // the file's most trained words, as links; hidden when it has none
  };
  std::string rows_switched(bool on) const;  // the rows switched on (or off) as the job lists LoRAs
  std::vector<Row> rows_;
  QVBoxLayout* list_;
  QLabel* refused_;  // why the last file given could not be added
};

// The words that call up a LoRA, at most `n`: the phrase its maker names (modelspec.trigger_phrase), then the words
// it was trained on most (kohya's ss_tag_frequency: {folder: {word: count}}), most frequent first; none when the file
// has no such metadata or cannot be read.
std::vector<std::string> lora_trigger_words(const std::string& file, size_t n = 5);

}  // namespace studio::gui
