// FFmpeg's words for one of its error codes, for the messages that name what failed.
#pragma once
extern "C" {
#include <libavutil/error.h>
}

#include <string>

namespace studio::video {

inline std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

}  // namespace studio::video
