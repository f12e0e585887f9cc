// A Player's export on a thread of its own: encoding a long clip (seconds to minutes for WebM) never stalls the
// window; each frame written is reported, and a cancel leaves nothing at the path (the writers write under a
// partial name and move the whole file into place).
#pragma once
#include <QImage>
#include <QObject>
#include <QString>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace studio::gui {

class ClipExport : public QObject {
  Q_OBJECT
 public:
  explicit ClipExport(QObject* parent = nullptr);
  ~ClipExport() override;  // cancels a running export and waits for it: what it began is removed

  bool running() const { return running_; }
  // Writes `frames` to `path` (its format from its extension) at `fps`; an image format writes frames[shown].
  void start(const std::vector<QImage>& frames, int shown, int fps, const std::map<std::string, std::string>& metadata,
             const QString& path);
  void cancel() { cancel_ = true; }

 Q_SIGNALS:
  void progress(int written, int total);
  // `error` empty: written whole. `cancelled`: stopped on request, nothing written.
  void finished(const QString& path, const QString& error, bool cancelled);

 private:
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;  // touched on the GUI thread only
};

}  // namespace studio::gui
