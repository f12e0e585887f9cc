#include "gui/models/models_view.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMenu>
#include <QMessageBox>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>

#include "gui/widgets/open_folder.h"
#include "hub/known_models.h"
#include "io/safetensors/single_file_kind.h"
#include "plan/human_bytes.h"

namespace fs = std::filesystem;

namespace studio::gui {

namespace {

constexpr const char* kListingFailed = "Could not list the models";


QString qs(const std::string& s) { return QString::fromStdString(s); }

QString duration(double s) {
  if (s < 0) return QObject::tr("?");
  if (s < 60) return QObject::tr("%1 s").arg(int(s));
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(int(s) / 60).arg(int(s) % 60, 2, 10, QChar('0'));
  return QObject::tr("%1 h %2 min").arg(int(s) / 3600).arg(int(s) / 60 % 60, 2, 10, QChar('0'));
}

QTableWidget* make_table(const QStringList& headers) {
  auto* t = new QTableWidget(0, int(headers.size()));
  t->setHorizontalHeaderLabels(headers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->verticalHeader()->hide();
  t->horizontalHeader()->setStretchLastSection(true);
  return t;
}

void set_row(QTableWidget* t, int row, const QStringList& cells, const QString& tooltip = {}) {
  for (int c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    if (!tooltip.isEmpty()) item->setToolTip(tooltip);
    t->setItem(row, c, item);
  }
}

}  // namespace

ModelsView::ModelsView(QWidget* parent) : QWidget(parent) {
  token_edit = new QLineEdit;
  token_edit->setObjectName("hf_token");
  token_edit->setEchoMode(QLineEdit::Password);
  token_edit->setPlaceholderText(tr("hf_... (for gated models such as FLUX.1-dev)"));
  save_token_button = new QPushButton(tr("Save token"));
  token_status = new QLabel;
  token_status->setWordWrap(true);
  auto* token_box = new QGroupBox(tr("Hugging Face token"));
  auto* token_layout = new QVBoxLayout(token_box);
  auto* token_row = new QHBoxLayout;
  token_row->addWidget(token_edit, 1);
  token_row->addWidget(save_token_button);
  token_layout->addLayout(token_row);
  token_layout->addWidget(token_status);

  cache_table = make_table({tr("Repository"), tr("Family"), tr("Size"), tr("Revision"), tr("State")});
  cache_table->setObjectName("cache_table");
  use_button = new QPushButton(tr("Use"));
  files_menu = new QMenu(this);
  files_menu->setObjectName("single_files_menu");
  use_button->setToolTip(tr("Make it the compose panel's model folder"));
  verify_button = new QPushButton(tr("Verify"));
  verify_button->setToolTip(tr("Hash every file again and compare with the Hub's hashes"));
  remove_button = new QPushButton(tr("Remove"));
  open_button = new QPushButton(tr("Open folder"));
  refresh_button = new QPushButton(tr("Refresh"));
  auto* cache_box = new QGroupBox(tr("In the Hugging Face cache"));
  auto* cache_layout = new QVBoxLayout(cache_box);
  cache_layout->addWidget(cache_table);
  auto* cache_buttons = new QHBoxLayout;
  for (auto* b : {use_button, verify_button, remove_button, open_button}) cache_buttons->addWidget(b);
  cache_buttons->addStretch();
  cache_buttons->addWidget(refresh_button);
  cache_layout->addLayout(cache_buttons);

  known_table = make_table({tr("Family"), tr("Model"), tr("Repository"), tr("Download"), tr("GPU memory")});
  known_table->setObjectName("known_table");
  const auto& known = hub::known_models();
  known_table->setRowCount(int(known.size()));
  for (size_t i = 0; i < known.size(); ++i) {
    const auto& k = known[i];
    set_row(known_table, int(i),
            {qs(k.family), qs(k.name) + (k.gated ? tr(" (gated: needs a token)") : QString()), qs(k.repo_id),
             tr("%1 GB").arg(k.download_gb, 0, 'f', 1), tr("%1 GB").arg(k.gpu_memory_gb, 0, 'g', 3)},
            qs(k.memory_note));
  }
  known_table->resizeColumnsToContents();
  repo_edit = new QLineEdit;
  repo_edit->setObjectName("repo_id");
  repo_edit->setPlaceholderText(tr("ORG/NAME, e.g. THUDM/CogVideoX-2b"));
  download_button = new QPushButton(tr("Download"));
  pause_button = new QPushButton(tr("Pause"));
  cancel_button = new QPushButton(tr("Cancel"));
  file_bar = new QProgressBar;
  total_bar = new QProgressBar;
  for (auto* bar : {file_bar, total_bar}) bar->setRange(0, 1000);
  progress_label = new QLabel;
  auto* known_box = new QGroupBox(tr("Models DiT Studio runs"));
  auto* known_layout = new QVBoxLayout(known_box);
  known_layout->addWidget(known_table);
  auto* download_row = new QHBoxLayout;
  download_row->addWidget(repo_edit, 1);
  for (auto* b : {download_button, pause_button, cancel_button}) download_row->addWidget(b);
  known_layout->addLayout(download_row);
  auto* bars = new QHBoxLayout;
  bars->addWidget(new QLabel(tr("File")));
  bars->addWidget(file_bar, 1);
  bars->addWidget(new QLabel(tr("All")));
  bars->addWidget(total_bar, 1);
  known_layout->addLayout(bars);
  known_layout->addWidget(progress_label);

  status = new QLabel;
  status->setObjectName("models_status");
  status->setWordWrap(true);
  status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(cache_box, 3);
  layout->addWidget(known_box, 3);
  layout->addWidget(token_box);
  layout->addWidget(status);

  connect(refresh_button, &QPushButton::clicked, this, &ModelsView::refresh);
  connect(use_button, &QPushButton::clicked, this, &ModelsView::use_selected);
  connect(verify_button, &QPushButton::clicked, this, &ModelsView::verify_selected);
  connect(remove_button, &QPushButton::clicked, this, &ModelsView::remove_selected);
  connect(open_button, &QPushButton::clicked, this, &ModelsView::open_selected);
  connect(cache_table, &QTableWidget::itemSelectionChanged, this, &ModelsView::update_buttons);
  connect(cache_table, &QTableWidget::cellDoubleClicked, this, &ModelsView::use_selected);
  connect(known_table, &QTableWidget::itemSelectionChanged, this, [this] {
    const int row = known_table->currentRow();
    if (row >= 0 && !task_.running() && !paused_) repo_edit->setText(known_table->item(row, 2)->text());
  });
  connect(download_button, &QPushButton::clicked, this, [this] { download(repo_edit->text().trimmed()); });
  connect(repo_edit, &QLineEdit::returnPressed, download_button, &QPushButton::click);
  connect(pause_button, &QPushButton::clicked, this, &ModelsView::pause_or_resume);
  connect(cancel_button, &QPushButton::clicked, this, &ModelsView::cancel);
  connect(&task_, &HubTask::progress, this, &ModelsView::on_progress);
  connect(&task_, &HubTask::note, this, [this](const QString& line) { show_status(line); });
  connect(&task_, &HubTask::finished, this,
          [this](int ending, const QString& message) { on_finished(ending, message); });
  connect(save_token_button, &QPushButton::clicked, this, [this] { tokens_.save(token_edit->text().trimmed()); });
  connect(&tokens_, &TokenStore::loaded, this, [this](const QString& token, const QString& message) {
    if (token_edit->text().isEmpty()) token_edit->setText(token);
    token_status->setText(message);
  });
  connect(&tokens_, &TokenStore::saved, this, [this](bool, const QString& message) { token_status->setText(message); });
  if (!qEnvironmentVariableIsEmpty("HF_TOKEN")) {
    token_edit->setEnabled(false);
    save_token_button->setEnabled(false);
    token_status->setText(tr("HF_TOKEN is set in the environment: it is the token used, as huggingface_hub does."));
  } else {
    tokens_.load();
  }
  refresh();
}

hub::HubSettings ModelsView::settings() const {
  auto s = hub::settings_from_environment();
  const QString token = token_edit->text().trimmed();
  if (s.token_source != "HF_TOKEN" && !token.isEmpty()) {
    s.token = token.toStdString();
    s.token_source = tokens_.store_reachable() ? "the studio's token field (the desktop's secret store)"
                                               : "the studio's token field (this session)";
  }
  return s;
}

ModelsView::~ModelsView() {
  if (lister_.joinable()) lister_.join();
}

void ModelsView::refresh() {
  ++listing_;
  update_buttons();  // what the table shows may be gone: nothing acts on it until it is listed again
  if (!lister_.joinable()) list(listing_);  // else the listing under way, now stale, starts this one as it ends
}

void ModelsView::list(int listing) {
  const std::string cache = hub::settings_from_environment().cache_dir;
  lister_ = std::thread([this, cache, listing] {
    // Every repository's weight headers and single files read here, never on the GUI thread (a large cache on a
    // slow disk takes seconds). A download or a removal may change the cache meanwhile.
    std::vector<hub::CachedRepo> repos;
    std::map<std::string, QString> kinds;
    QString error;
    try {
      repos = hub::list_cache(cache);
      for (const auto& r : repos)
        for (const auto& f : r.single_files)
          kinds[r.snapshot + "/" + f] = qs(io::single_file_kind(r.snapshot + "/" + f));
    } catch (const std::exception& e) {
      error = tr(kListingFailed) + tr(" in %1: %2. Refresh tries again.").arg(qs(cache), qs(e.what()));
    }
    QMetaObject::invokeMethod(this, [this, listing, repos = std::move(repos), kinds = std::move(kinds), cache, error] {
      lister_.join();  // it has nothing left to do but return
      if (listing != listing_) return list(listing_);  // refreshed meanwhile: list again
      repos_ = repos;
      kinds_ = kinds;
      if (!error.isEmpty()) show_status(error, true);
      else if (status->text().startsWith(kListingFailed)) show_status({});  // listed again: that is over
      show_cache(cache);
    }, Qt::QueuedConnection);
  });
}

QString ModelsView::kind_of(const hub::CachedRepo& r, const std::string& file) const {
  const auto it = kinds_.find(r.snapshot + "/" + file);
  return it != kinds_.end() ? it->second : tr("single file");
}

void ModelsView::show_cache(const std::string& cache) {
  const QString selected = selected_repo();
  cache_table->setRowCount(int(repos_.size()));
  for (size_t i = 0; i < repos_.size(); ++i) {
    const auto& r = repos_[i];
    QString revision = qs(r.commit.substr(0, 8));
    for (const auto& [ref, commit] : r.refs)
      if (commit == r.commit) revision = qs(ref) + " (" + revision + ")";
    QString state = !r.complete  ? tr("incomplete: %1").arg(r.problems.empty() ? tr("?") : qs(r.problems.front()))
                    : r.verified ? tr("complete, verified")
                                 : tr("complete, not verified");
    QStringList without;
    for (const auto& c : r.without_weights) without << qs(c) + "/";
    if (!without.isEmpty()) state += tr("; no %1 weights (a single file stands for them)").arg(without.join(", "));
    QString family = r.family.empty() ? tr("-") : qs(r.family);
    if (!r.single_files.empty()) {
      // Each file by what it is (a LoRA by the family its blocks are), files of one kind together.
      std::vector<std::pair<QString, QStringList>> kinds;
      for (const auto& f : r.single_files) {
        const QString kind = kind_of(r, f);
        auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
        (it == kinds.end() ? kinds.emplace_back(kind, QStringList()).second : it->second) << qs(f);
      }
      QStringList parts;
      for (const auto& [kind, files] : kinds) parts << kind + ": " + files.join(", ");
      family = parts.join("; ");
    }
    set_row(cache_table, int(i),
            {qs(r.repo_id), family, qs(plan::human_bytes(r.bytes_on_disk)), revision,
             state},
            qs(r.snapshot.empty() ? r.dir : r.snapshot));
    if (qs(r.repo_id) == selected) cache_table->selectRow(int(i));
  }
  cache_table->resizeColumnsToContents();
  if (repos_.empty() && status->text().isEmpty())
    show_status(tr("No models in %1 yet: pick one below and download it.").arg(qs(cache)));
  listed_ = listing_;
  update_buttons();
  if (finished_ending_) {  // a task's end waited for its result to be listed
    const int ending = *finished_ending_;
    finished_ending_.reset();
    Q_EMIT task_finished(ending);
  }
}

QString ModelsView::selected_repo() const {
  const auto rows = cache_table->selectionModel()->selectedRows();
  if (rows.isEmpty() || rows.first().row() >= int(repos_.size())) return {};
  return qs(repos_[size_t(rows.first().row())].repo_id);
}

void ModelsView::update_buttons() {
  const QString repo = selected_repo();
  const bool busy = task_.running();
  const hub::CachedRepo* r = nullptr;
  for (const auto& c : repos_)
    if (qs(c.repo_id) == repo) r = &c;
  if (listing()) r = nullptr;  // the table may show what is gone
  use_button->setEnabled(r && !r->snapshot.empty());
  verify_button->setEnabled(r && !r->snapshot.empty() && !busy && !paused_);
  remove_button->setEnabled(r && !busy && !(paused_ && repo == repo_));
  open_button->setEnabled(r != nullptr);
  download_button->setEnabled(!busy && !paused_);
  repo_edit->setEnabled(!busy && !paused_);
  pause_button->setEnabled((busy && op_ == Op::Download && !cancelling_ && !paused_) || (paused_ && !busy));
  pause_button->setText(paused_ && !busy ? tr("Resume") : tr("Pause"));
  cancel_button->setEnabled((busy && !cancelling_) || paused_);
}

void ModelsView::show_status(const QString& text, bool error) {
  status->setText(text);
  status->setStyleSheet(error ? "color: #c0392b;" : "");
}

bool ModelsView::download(const QString& repo_id) {
  if (task_.running() || paused_) {
    show_status(tr("%1 is paused or running: resume or cancel it first.").arg(repo_), true);
    return false;
  }
  if (!hub::is_repo_id(repo_id.toStdString())) {
    show_status(tr("'%1' is not a Hub repository id: expected ORG/NAME, e.g. THUDM/CogVideoX-2b.").arg(repo_id), true);
    return false;
  }
  const auto s = settings();
  repo_ = repo_id;
  repo_edit->setText(repo_id);
  std::error_code ec;
  existed_before_ = fs::exists(hub::repo_dir(s.cache_dir, repo_id.toStdString()), ec);
  cancelling_ = false;
  op_ = Op::Download;
  file_bar->setValue(0);
  total_bar->setValue(0);
  progress_label->setText(tr("Asking %1 for %2...").arg(qs(s.endpoint), repo_id));
  show_status(tr("Downloading %1 into %2.").arg(repo_id, qs(s.cache_dir)));
  task_.download(s, repo_id);
  update_buttons();
  return true;
}

void ModelsView::pause_or_resume() {
  if (paused_ && !task_.running()) {
    paused_ = false;
    download(repo_);
    return;
  }
  if (!task_.running() || op_ != Op::Download) return;
  paused_ = true;
  task_.stop();
  update_buttons();
}

void ModelsView::cancel() {
  if (task_.running()) {
    cancelling_ = true;
    task_.stop();
  } else if (paused_) {
    paused_ = false;
    discard_partial();
    show_status(tr("Cancelled %1: what it had fetched is deleted.").arg(repo_));
    refresh();
  }
  update_buttons();
}

// A cancelled download leaves nothing: the whole repo when it was not in the cache before, else only the
// unfinished files (its finished blobs are the cache's, and may be linked by an older snapshot).
void ModelsView::discard_partial() {
  const std::string cache = settings().cache_dir, repo = repo_.toStdString();
  const fs::path dir = hub::repo_dir(cache, repo);
  std::error_code ec;
  if (!existed_before_ && fs::exists(dir, ec)) {
    hub::remove_repo(cache, repo);
    return;
  }
  for (const auto& e : fs::directory_iterator(dir / "blobs", ec))
    if (e.path().extension() == ".incomplete") fs::remove(e.path(), ec);
}

// A download refused before anything arrived (a gated repo, no such repo) leaves no empty folder.
void ModelsView::forget_if_empty() {
  const std::string cache = settings().cache_dir, repo = repo_.toStdString();
  const fs::path blobs = fs::path(hub::repo_dir(cache, repo)) / "blobs";
  std::error_code ec;
  if (existed_before_ || !fs::is_directory(blobs, ec)) return;
  for (const auto& e : fs::directory_iterator(blobs, ec))
    if (e.file_size(ec) > 0) return;  // a resumable start, or a finished blob
  hub::remove_repo(cache, repo);
}

void ModelsView::on_progress(const hub::Progress& p) {
  const auto fraction = [](uint64_t a, uint64_t b) { return b ? int(1000 * double(a) / double(b)) : 1000; };
  file_bar->setValue(fraction(p.file_bytes, p.file_total));
  total_bar->setValue(fraction(p.bytes, p.total));
  const bool file_done = p.file_total > 0 && p.file_bytes >= p.file_total;
  progress_label->setText(tr("[%1/%2] %3%4 | %5 of %6, %7/s, ETA %8")
                              .arg(p.files_done + (file_done ? 0 : 1))
                              .arg(p.files_total)
                              .arg(qs(p.file), p.hashing ? tr(" (hashing)") : QString())
                              .arg(qs(plan::human_bytes(p.bytes)), qs(plan::human_bytes(p.total)),
                                   qs(plan::human_bytes(uint64_t(p.bytes_per_second))), duration(p.eta_seconds)));
}

void ModelsView::on_finished(int ending, const QString& message) {
  const Op op = op_;
  op_ = Op::None;
  if (ending == HubTask::Done) {
    paused_ = false;  // a pause asked as it finished
    total_bar->setValue(1000);
    show_status(op == Op::Download ? tr("Downloaded %1").arg(message) : message);
  } else if (ending == HubTask::Stopped && cancelling_) {
    cancelling_ = paused_ = false;
    if (op == Op::Download) discard_partial();
    show_status(op == Op::Download ? tr("Cancelled %1: what it had fetched is deleted.").arg(repo_)
                                   : tr("Verification stopped."));
  } else if (ending == HubTask::Stopped && paused_) {
    const QString where = progress_label->text().section('|', -1).trimmed();
    show_status(tr("Paused %1 at %2: Resume continues where it stopped.").arg(repo_, where));
  } else {
    paused_ = false;
    if (op == Op::Download) forget_if_empty();
    QString text = message;
    if (message.contains("401"))
      text += tr("\nIn the studio: paste the token in the Hugging Face token field below, then download again.");
    show_status(text, true);
  }
  if (!paused_) progress_label->clear();
  finished_ending_ = ending;  // said once the cache is listed again, the task's result in it
  refresh();
}

void ModelsView::verify_selected() {
  const QString repo = selected_repo();
  if (repo.isEmpty() || task_.running() || paused_) return;
  op_ = Op::Verify;
  cancelling_ = false;
  show_status(tr("Verifying %1...").arg(repo));
  task_.verify(qs(settings().cache_dir), repo);
  update_buttons();
}

void ModelsView::remove_selected() {
  const QString repo = selected_repo();
  if (repo.isEmpty() || task_.running()) return;
  uint64_t bytes = 0;
  for (const auto& r : repos_)
    if (qs(r.repo_id) == repo) bytes = r.bytes_on_disk;
  QMessageBox box(QMessageBox::Question, tr("Remove a model"),
                  tr("Remove %1 (%2) from the Hugging Face cache? Other programs sharing the cache (diffusers, "
                     "huggingface-cli) lose it too.")
                      .arg(repo, qs(plan::human_bytes(bytes))),
                  QMessageBox::Yes | QMessageBox::No, this);
  box.setObjectName("confirm_remove");
  box.button(QMessageBox::Yes)->setText(tr("Remove"));
  box.setDefaultButton(QMessageBox::No);
  if (box.exec() != QMessageBox::Yes) return;
  try {
    const uint64_t freed = hub::remove_repo(settings().cache_dir, repo.toStdString());
    show_status(tr("Removed %1 (%2 freed).").arg(repo, qs(plan::human_bytes(freed))));
  } catch (const std::exception& e) {
    show_status(qs(e.what()), true);
  }
  refresh();
}

void ModelsView::use_single_file(const hub::CachedRepo& r, const std::string& name) {
  const QString file = qs(r.snapshot) + "/" + qs(name);
  if (io::lora_fit_if_any(r.snapshot + "/" + name).is_lora) {
    show_status(tr("Added %1 to the LoRAs (Compose).").arg(file));
    Q_EMIT use_lora(file);
    return;
  }
  show_status(tr("Using %1 as the transformer file (Memory), with the model folder chosen.").arg(file));
  Q_EMIT use_file(file);
}

void ModelsView::use_selected() {
  const QString repo = selected_repo();
  for (const auto& r : repos_)
    if (qs(r.repo_id) == repo && !r.snapshot.empty()) {
      if (r.single_files.size() == 1) {
        use_single_file(r, r.single_files.front());
        continue;
      }
      if (!r.single_files.empty()) {  // which of them: a menu under Use, each file with what it is
        files_menu->clear();
        for (const auto& f : r.single_files)
          connect(files_menu->addAction(qs(f) + "  (" + kind_of(r, f) + ")"), &QAction::triggered, this,
                  [this, r, f] { use_single_file(r, f); });
        files_menu->popup(use_button->mapToGlobal(QPoint(0, use_button->height())));
        continue;
      }
      show_status(tr("Using %1 (%2).").arg(repo, qs(r.snapshot)));
      Q_EMIT use(qs(r.snapshot));
    }
}

void ModelsView::open_selected() {
  const QString repo = selected_repo();
  for (const auto& r : repos_)
    if (qs(r.repo_id) == repo)
      if (const QString why = open_folder(qs(r.snapshot.empty() ? r.dir : r.snapshot)); !why.isEmpty()) status->setText(why);
}

bool ModelsView::show_known(const QString& repo_id) {
  for (int row = 0; row < known_table->rowCount(); ++row)
    if (known_table->item(row, 2)->text() == repo_id) {
      known_table->selectRow(row);
      known_table->scrollToItem(known_table->item(row, 2));
      return true;
    }
  return false;
}

}  // namespace studio::gui
