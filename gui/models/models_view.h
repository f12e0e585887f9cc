// The Models tab: what the Hugging Face Hub's cache holds (the one huggingface-cli and diffusers use): pipelines,
// and repositories of single files (a GGUF quant, an fp8 checkpoint, a LoRA: listed by the family its blocks
// are, io/safetensors/lora_files.h), with Use (the compose panel's model folder, for a single file the Memory group's
// transformer file, for a LoRA a row of the compose LoRA list), Verify, Remove and Open folder; the models we run with
// their sizes and GPU memory (hub::known_models); a download with per-file and overall progress, speed
// and ETA, pause/resume and cancel, off the GUI thread (HubTask); the token for gated models, kept in the
// desktop's secret store (TokenStore). HF_TOKEN in the environment wins over it, as in huggingface_hub.
#pragma once
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QWidget>

#include <map>
#include <optional>
#include <thread>

#include "gui/models/hub_task.h"
#include "gui/models/token_store.h"
#include "hub/cache.h"

namespace studio::gui {

class ModelsView : public QWidget {
  Q_OBJECT
 public:
  explicit ModelsView(QWidget* parent = nullptr);
  ~ModelsView() override;  // waits for a listing under way

  // Lists the cache again (the environment's HF_HUB_CACHE, read each time), on a thread: the table follows.
  void refresh();
  bool listing() const { return listed_ != listing_; }  // a refresh has not reached the table yet
  // Starts downloading `repo_id` (resuming what an earlier one left); false, with the reason shown, when
  // another task runs or it is no repo id.
  bool download(const QString& repo_id);
  void pause_or_resume();
  void cancel();  // a running download or a paused one: what it fetched of unfinished files is deleted
  void verify_selected();
  void remove_selected();  // asks first
  void use_selected();
  void open_selected();
  QString selected_repo() const;
  // Selects a known model's row (and its repository id in the download field); false if none has that id.
  bool show_known(const QString& repo_id);
  // The environment's settings, with the token of the field when HF_TOKEN is not set.
  hub::HubSettings settings() const;

  QTableWidget* cache_table;  // repo, family, size, revision, state
  QTableWidget* known_table;  // family, model, repo id, download, GPU memory
  QPushButton *use_button, *verify_button, *remove_button, *open_button, *refresh_button;
  QMenu* files_menu;  // Use on a repository of several single files: which one
  QLineEdit* repo_edit;
  QPushButton *download_button, *pause_button, *cancel_button;
  QProgressBar *file_bar, *total_bar;
  QLabel *progress_label, *status;
  QLineEdit* token_edit;
  QPushButton* save_token_button;
  QLabel* token_status;

 Q_SIGNALS:
  void use(const QString& model_dir);
  void use_file(const QString& file);  // a single file's repository: the file, as the transformer's
  void use_lora(const QString& file);  // a LoRA's repository: the file, added to the compose LoRA list
  void task_finished(int ending);  // HubTask::Ending, once the view has shown it and listed the cache again

 private:
  enum class Op { None, Download, Verify };
  void on_progress(const hub::Progress& p);
  void on_finished(int ending, const QString& message);
  void discard_partial();
  void forget_if_empty();
  void show_status(const QString& text, bool error = false);
  void update_buttons();
  void use_single_file(const hub::CachedRepo& r, const std::string& file);
  void list(int listing);                     // reads the cache on lister_, then shows it
  void show_cache(const std::string& cache);  // repos_ in the table
  // A file of a single-file repository in words: "LoRA for FLUX.1, width 32", "LoRA" or "single file".
  QString kind_of(const hub::CachedRepo& r, const std::string& file) const;
  std::vector<hub::CachedRepo> repos_;
  std::map<std::string, QString> kinds_;  // each single file (snapshot/file) in words, read with the listing
  std::thread lister_;
  int listing_ = 0, listed_ = 0;          // the last refresh asked for, the last shown
  std::optional<int> finished_ending_;    // a task's end, said once its result is listed
  HubTask task_;
  TokenStore tokens_;
  Op op_ = Op::None;
  QString repo_;                 // of the download running or paused
  bool paused_ = false, cancelling_ = false;
  bool existed_before_ = false;  // the repo was in the cache before this download began
};

}  // namespace studio::gui
