// The two digests the Hub names files by: an LFS file's sha256, and a git blob's sha1 (of "blob SIZE\0"
// followed by the content), computed with OpenSSL's libcrypto over a file read in pieces.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace studio::hub {

// Called with the bytes hashed so far; a set `cancel` flag stops the read (throws studio::Cancelled).
struct HashWatch {
  std::function<void(uint64_t bytes)> on_bytes;
  const std::atomic<bool>* cancel = nullptr;
};

// Lower-case hex digests; throw InputError naming the file when it cannot be read.
std::string sha256_of_file(const std::string& path, const HashWatch& watch = {});
std::string git_blob_sha1_of_file(const std::string& path, const HashWatch& watch = {});
std::string sha256_of(const std::string& bytes);
std::string git_blob_sha1_of(const std::string& bytes);

// Whether `s` is 64 (sha256) or 40 (sha1) lower-case hex digits.
bool is_sha256_hex(const std::string& s);
bool is_sha1_hex(const std::string& s);

}  // namespace studio::hub
