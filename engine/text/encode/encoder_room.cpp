#include "text/encode/encoder_room.h"

namespace studio::text {

namespace {
thread_local RoomForEncoders* g_innermost = nullptr;
}  // namespace

RoomForEncoders::RoomForEncoders(std::function<bool()> make_room)
    : make_room_(std::move(make_room)), outer_(g_innermost) {
  g_innermost = this;
}

RoomForEncoders::~RoomForEncoders() { g_innermost = outer_; }

bool RoomForEncoders::make_room() { return g_innermost && g_innermost->make_room_ && g_innermost->make_room_(); }

}  // namespace studio::text
