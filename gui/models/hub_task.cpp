#include "gui/models/hub_task.h"

#include "plan/error.h"
#include "plan/human_bytes.h"

namespace studio::gui {

HubTask::HubTask(QObject* parent) : QObject(parent) {
  qRegisterMetaType<hub::Progress>();
  // Connected first, so that whoever listens to finished() sees the task as no longer running.
  connect(this, &HubTask::finished, this, [this] { running_ = false; });
}

HubTask::~HubTask() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

template <class F>
void HubTask::start(F&& work) {
  if (thread_.joinable()) thread_.join();  // the last one has emitted finished(): it is ending
  cancel_ = false;
  running_ = true;
  thread_ = std::thread([this, work = std::forward<F>(work)] {
    try {
      work();
    } catch (const Cancelled&) {
      Q_EMIT finished(Stopped, tr("Stopped."), {});
    } catch (const std::exception& e) {
      Q_EMIT finished(Failed, QString::fromStdString(e.what()), {});
    }
  });
}

void HubTask::download(const hub::HubSettings& settings, const QString& repo_id) {
  start([this, settings, repo = repo_id.toStdString()] {
    hub::HubClient client(settings);
    hub::DownloadOptions o;
    o.cancel = &cancel_;
    o.on_progress = [this](const hub::Progress& p) { Q_EMIT progress(p); };
    o.on_note = [this](const std::string& line) { Q_EMIT note(QString::fromStdString(line)); };
    const auto r = hub::download_repo(client, repo, o);
    Q_EMIT finished(Done,
                    tr("%1: %2 files, %3 fetched (%4).")
                        .arg(QString::fromStdString(repo))
                        .arg(r.files)
                        .arg(r.fetched)
                        .arg(QString::fromStdString(plan::human_bytes(r.bytes_fetched))),
                    QString::fromStdString(r.snapshot));
  });
}

void HubTask::verify(const QString& cache_dir, const QString& repo_id) {
  start([this, cache = cache_dir.toStdString(), repo = repo_id.toStdString()] {
    const auto on_progress = [this](const hub::Progress& p) { Q_EMIT progress(p); };
    const auto r = hub::verify_repo(cache, repo, "main", on_progress, &cancel_);
    if (!r.mismatched.empty()) {
      QString lines;
      for (const auto& m : r.mismatched) lines += "\n" + QString::fromStdString(m);
      Q_EMIT finished(Failed, tr("%1: %2 of %3 files do not match their hash; remove it and download it again:%4")
                                  .arg(QString::fromStdString(repo))
                                  .arg(r.mismatched.size())
                                  .arg(r.files)
                                  .arg(lines),
                      {});
      return;
    }
    Q_EMIT finished(Done, tr("%1: %2 files (%3) match their hashes.")
                              .arg(QString::fromStdString(repo)).arg(r.files)
                              .arg(QString::fromStdString(plan::human_bytes(r.bytes))), {});
  });
}

}  // namespace studio::gui
