#include "gui/models/token_store.h"

#include <qt6keychain/keychain.h>

namespace studio::gui {

namespace {
const char* kService = "DiT Studio";
const char* kKey = "huggingface-token";
}  // namespace

QString TokenStore::unreachable(const QString& why) const {
  // QtKeychain says "Unknown error" when no store answers at all: that adds nothing.
  const QString detail = why.isEmpty() || why.contains("Unknown error", Qt::CaseInsensitive) ? QString() : " (" + why + ")";
  return tr("No secret store is available%1: a desktop keyring such as GNOME Keyring or KWallet is needed "
            "to keep the token. It is used for this session only.")
      .arg(detail);
}

void TokenStore::load() {
  auto* job = new QKeychain::ReadPasswordJob(kService, this);
  job->setKey(kKey);
  connect(job, &QKeychain::Job::finished, this, [this, job] {
    reachable_ = job->error() == QKeychain::NoError || job->error() == QKeychain::EntryNotFound;
    if (job->error() == QKeychain::NoError) {
      token_ = job->textData();
      Q_EMIT loaded(token_, tr("The token is kept in the desktop's secret store."));
    } else if (job->error() == QKeychain::EntryNotFound) {
      Q_EMIT loaded({}, tr("No token saved: gated models (FLUX.1-dev) need one."));
    } else {
      Q_EMIT loaded({}, unreachable(job->errorString()));
    }
  });
  job->start();
}

void TokenStore::save(const QString& token) {
  token_ = token;
  QKeychain::Job* job = nullptr;
  if (token.isEmpty()) {
    job = new QKeychain::DeletePasswordJob(kService, this);
  } else {
    auto* write = new QKeychain::WritePasswordJob(kService, this);
    write->setTextData(token);
    job = write;
  }
  job->setKey(kKey);
  connect(job, &QKeychain::Job::finished, this, [this, job, token] {
    const bool ok = job->error() == QKeychain::NoError || (token.isEmpty() && job->error() == QKeychain::EntryNotFound);
    reachable_ = ok;
    if (ok) Q_EMIT saved(true, token.isEmpty() ? tr("No token saved.") : tr("Saved in the desktop's secret store."));
    else Q_EMIT saved(false, token.isEmpty() ? tr("No token for this session.") : unreachable(job->errorString()));
  });
  job->start();
}

}  // namespace studio::gui
