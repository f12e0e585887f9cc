#include "hub/hashing.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "plan/error.h"

namespace studio::hub {

namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Context new_context(const EVP_MD* md) {
  Context ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) throw std::runtime_error("OpenSSL: cannot start a digest");
  return ctx;
}

std::string finish_hex(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &n) != 1) throw std::runtime_error("OpenSSL: cannot finish a digest");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += {hex[digest[i] >> 4], hex[digest[i] & 15]};
  return out;
}

void hash_file_into(EVP_MD_CTX* ctx, const std::string& path, const HashWatch& watch) {
  std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  std::vector<char> buffer(1 << 20);
  uint64_t done = 0;
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), f.get())) > 0;) {
    if (watch.cancel && watch.cancel->load()) throw Cancelled();
    EVP_DigestUpdate(ctx, buffer.data(), n);
    done += n;
    if (watch.on_bytes) watch.on_bytes(done);
  }
  if (std::ferror(f.get())) throw InputError(path + ": read failed (" + std::strerror(errno) + ")");
}

bool is_hex(const std::string& s, size_t length) {
  return s.size() == length && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string sha256_of_file(const std::string& path, const HashWatch& watch) {
  auto ctx = new_context(EVP_sha256());
  hash_file_into(ctx.get(), path, watch);
  return finish_hex(ctx.get());
}

std::string git_blob_sha1_of_file(const std::string& path, const HashWatch& watch) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot read (" + ec.message() + ")");
  auto ctx = new_context(EVP_sha1());
  const std::string header = "blob " + std::to_string(size) + std::string(1, '\0');
  EVP_DigestUpdate(ctx.get(), header.data(), header.size());
  hash_file_into(ctx.get(), path, watch);
  return finish_hex(ctx.get());
}

std::string sha256_of(const std::string& bytes) {
  auto ctx = new_context(EVP_sha256());
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finish_hex(ctx.get());
}

std::string git_blob_sha1_of(const std::string& bytes) {
  auto ctx = new_context(EVP_sha1());
  const std::string header = "blob " + std::to_string(bytes.size()) + std::string(1, '\0');
  EVP_DigestUpdate(ctx.get(), header.data(), header.size());
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finish_hex(ctx.get());
}

bool is_sha256_hex(const std::string& s) { return is_hex(s, 64); }
bool is_sha1_hex(const std::string& s) { return is_hex(s, 40); }

}  // namespace studio::hub
