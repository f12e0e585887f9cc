// Room on the device for a text encoder. While a RoomForEncoders lives on this thread, choose_device() (prompt.h)
// calls its `make_room` (a serving worker letting its kept transformer go) before it sends an encoder to the CPU,
// so that a served run encodes where and in the dtype a fresh run would.
#pragma once
#include <functional>

namespace studio::text {

class RoomForEncoders {
 public:
  explicit RoomForEncoders(std::function<bool()> make_room);
  ~RoomForEncoders();
  RoomForEncoders(const RoomForEncoders&) = delete;
  RoomForEncoders& operator=(const RoomForEncoders&) = delete;
  // The innermost one's make_room(): whether it freed something; false where none lives.
  static bool make_room();

 private:
  std::function<bool()> make_room_;
  RoomForEncoders* outer_;
};

}  // namespace studio::text
