// A run's pictures, decoded and saved off the GUI thread: the job's thread turns each Preview and Frame
// event into an image, and a thread of the encoder's own writes the frames as lossless PNGs (for
// comparing runs), so that a large frame never stalls the window nor the intake of events.
#pragma once
#include <QImage>
#include <QString>
#include <QThreadPool>

#include <atomic>

#include "workers/events/messages.h"

namespace studio::gui {

// A step's latent preview, or a decoded frame, as an image of its own.
struct RunPicture {
  bool frame = false;  // false: a Preview
  int rank = 0, step = 0, video = 0, index = 0;
  QImage image;
};

// The picture an event carries (which must be a Preview or a Frame).
RunPicture decode_picture(const events::Message& m);

// An RGB8 picture from the events (a preview or a frame) as an image of its own.
QImage to_image(const events::Picture& p);

class FrameEncoder {
 public:
  explicit FrameEncoder(QString folder);  // the frames go to folder/NNNN.png; "" saves nothing
  ~FrameEncoder();                         // waits for the frames queued
  // Queues the frame (video 0's; the others are not kept) for saving.
  void save(const RunPicture& p);
  void wait();
  int failures() const { return failures_.load(); }
  QString folder() const { return folder_; }

 private:
  QString folder_;
  QThreadPool pool_;
  std::atomic<int> failures_{0};
};

}  // namespace studio::gui
